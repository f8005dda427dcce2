package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/crc64nvme"
)

// streamingS3 is the S3 endpoint of the base backup benchmark: the calls
// a backup makes (PutObject, the multipart upload's Create, UploadPart,
// Complete and Abort, DeleteObject, and GetObject to read one back),
// answered as S3 answers them, objects in memory. It does what a real
// endpoint does on its own machines and no more: each part is read once
// into a buffer of its length, and completing an upload joins the parts'
// buffers without reading them again. (gofakes3, the other tests'
// server, reads each part into a growing buffer and hashes it with MD5,
// then copies the whole object into one buffer and hashes it again on
// completion: 6.5-7 CPU-s per GB and some 3 s per GiB after the last
// part, on the cores the benchmark measures.)
//
// A part's ETag is its CRC-64/NVME: S3's ETag identifies the content and
// is the MD5 only for some objects (not for multipart uploads, nor with
// SSE-KMS), and cairn only hands it back in CompleteMultipartUpload.
// Anything else is refused as NotImplemented, so that a new call shows.
type streamingS3 struct {
	bucket, accessKey string

	mu      sync.Mutex
	objects map[string]storedObject
	uploads map[string]*s3Upload
}

// storedObject is an object: its parts' buffers, in order.
type storedObject struct {
	etag  string
	parts [][]byte
}

type s3Upload struct {
	key   string
	parts map[int]s3Part
}

type s3Part struct {
	etag string
	data []byte
}

func newStreamingS3(bucket, accessKey string) *streamingS3 {
	return &streamingS3{bucket: bucket, accessKey: accessKey, objects: map[string]storedObject{}, uploads: map[string]*s3Upload{}}
}

func (s *streamingS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Authorization"), "Credential="+s.accessKey+"/") {
		s3Fail(w, http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != s.bucket {
		s3Fail(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		return
	}
	q := r.URL.Query()
	switch {
	case key == "":
	case r.Method == http.MethodPost && q.Has("uploads"):
		s.create(w, key)
		return
	case r.Method == http.MethodPut && q.Has("uploadId"):
		s.uploadPart(w, r, q.Get("uploadId"), q.Get("partNumber"))
		return
	case r.Method == http.MethodPost && q.Has("uploadId"):
		s.complete(w, r, key, q.Get("uploadId"))
		return
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		s.abort(w, q.Get("uploadId"))
		return
	case len(q) > 0 || r.Header.Get("Range") != "":
	case r.Method == http.MethodPut:
		s.put(w, r, key)
		return
	case r.Method == http.MethodDelete:
		s.mu.Lock()
		delete(s.objects, key)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		s.get(w, r, key)
		return
	}
	s3Fail(w, http.StatusNotImplemented, "NotImplemented", "The benchmark's S3 server does not take "+r.Method+" "+r.URL.RequestURI())
}

func s3Fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_ = xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: code, Message: msg})
}

func s3Reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(v)
}

// readBody reads a request's body whole into a buffer of its length.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength < 0 {
		s3Fail(w, http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header.")
		return nil, false
	}
	data := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, data); err != nil {
		s3Fail(w, http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.")
		return nil, false
	}
	return data, true
}

func etag(data []byte) string { return `"` + crcHex(data) + `"` }

func crcHex(data []byte) string {
	h := crc64nvme.New()
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *streamingS3) put(w http.ResponseWriter, r *http.Request, key string) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	s.objects[key] = storedObject{etag: etag(data), parts: [][]byte{data}}
	s.mu.Unlock()
	w.Header().Set("ETag", etag(data))
}

func (s *streamingS3) create(w http.ResponseWriter, key string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	s.uploads[id] = &s3Upload{key: key, parts: map[int]s3Part{}}
	s.mu.Unlock()
	s3Reply(w, struct {
		XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
		Bucket   string
		Key      string
		UploadID string `xml:"UploadId"`
	}{Bucket: s.bucket, Key: key, UploadID: id})
}

func (s *streamingS3) uploadPart(w http.ResponseWriter, r *http.Request, id, number string) {
	n, err := strconv.Atoi(number)
	if err != nil || n < 1 || n > 10000 {
		s3Fail(w, http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
		return
	}
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	p := s3Part{etag: etag(data), data: data}
	s.mu.Lock()
	up := s.uploads[id]
	if up != nil {
		up.parts[n] = p
	}
	s.mu.Unlock()
	if up == nil {
		s3Fail(w, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.")
		return
	}
	w.Header().Set("ETag", p.etag)
}

// complete joins the parts named, in order, each with the ETag it was
// given and each but the last at least 5 MiB, as S3 requires.
func (s *streamingS3) complete(w http.ResponseWriter, r *http.Request, key, id string) {
	var in struct {
		Parts []struct {
			PartNumber int
			ETag       string
		} `xml:"Part"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Parts) == 0 {
		s3Fail(w, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	up := s.uploads[id]
	if up == nil || up.key != key {
		s3Fail(w, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.")
		return
	}
	var parts [][]byte
	var etags strings.Builder
	for i, p := range in.Parts {
		got, ok := up.parts[p.PartNumber]
		switch {
		case !ok || strings.Trim(p.ETag, `"`) != strings.Trim(got.etag, `"`):
			s3Fail(w, http.StatusBadRequest, "InvalidPart", fmt.Sprintf("Part %d could not be found or its ETag does not match.", p.PartNumber))
			return
		case i > 0 && p.PartNumber <= in.Parts[i-1].PartNumber:
			s3Fail(w, http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order.")
			return
		case i < len(in.Parts)-1 && len(got.data) < 5<<20:
			s3Fail(w, http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
			return
		}
		parts = append(parts, got.data)
		etags.WriteString(got.etag)
	}
	delete(s.uploads, id)
	obj := storedObject{etag: fmt.Sprintf(`"%s-%d"`, crcHex([]byte(etags.String())), len(parts)), parts: slices.Clip(parts)}
	s.objects[key] = obj
	s3Reply(w, struct {
		XMLName xml.Name `xml:"CompleteMultipartUploadResult"`
		Bucket  string
		Key     string
		ETag    string
	}{Bucket: s.bucket, Key: key, ETag: obj.etag})
}

func (s *streamingS3) abort(w http.ResponseWriter, id string) {
	s.mu.Lock()
	_, ok := s.uploads[id]
	delete(s.uploads, id)
	s.mu.Unlock()
	if !ok {
		s3Fail(w, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *streamingS3) get(w http.ResponseWriter, r *http.Request, key string) {
	s.mu.Lock()
	obj, ok := s.objects[key]
	s.mu.Unlock()
	if !ok {
		s3Fail(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	size := 0
	for _, p := range obj.parts {
		size += len(p)
	}
	w.Header().Set("Content-Length", strconv.Itoa(size))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	w.Header().Set("ETag", obj.etag)
	if r.Method == http.MethodHead {
		return
	}
	for _, p := range obj.parts {
		if _, err := w.Write(p); err != nil {
			return
		}
	}
}

// The benchmark's server stores and returns what a backup writes, and
// leaves nothing of an aborted upload; it refuses other access keys and
// what it does not implement.
func TestStreamingS3Server(t *testing.T) {
	ctx := context.Background()
	endpoint, ca, _ := S3ServerForBench(t)
	s3 := S3StoreForBench(t, endpoint, ca).(*S3Store)
	s3.PartSize = 5 << 20
	data := payload(12<<20 + 5)
	m, err := Take(ctx, s3, "db", "PostgresCluster", bytesSource{data: data}, clock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenData(ctx, s3, m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read back %d bytes: %v", len(back), err)
	}
	for name, piece := range map[string]int{"empty": 1, "aborted": 1 << 20} {
		n, err := writeObject(ctx, s3, "db/"+name, payload(map[string]int{"aborted": 11 << 20}[name]), piece, name == "aborted")
		if err != nil || name == "empty" && n != 0 {
			t.Fatalf("%s: %d, %v", name, n, err)
		}
	}
	if r, err := s3.Get(ctx, "db/aborted"); err == nil {
		r.Close()
		t.Fatal("an aborted upload left an object")
	}
	if r, err := s3.Get(ctx, "db/empty"); err != nil {
		t.Fatalf("the empty object: %v", err)
	} else {
		r.Close()
	}
	for _, c := range []struct {
		name string
		do   func(st Store) error
		want string
	}{
		{"other credentials", func(Store) error {
			st, err := NewS3Store(Location{Scheme: "s3", Bucket: "backups"}, S3Config{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: "other", SecretAccessKey: "x", CABundle: ca})
			if err == nil {
				_, err = st.Put(ctx, "k", strings.NewReader("x"))
			}
			return err
		}, "credentials were refused"},
		{"a listing", func(st Store) error { _, err := st.List(ctx, "db/"); return err }, "does not take GET"},
	} {
		if err := c.do(s3); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
