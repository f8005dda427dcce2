package backup

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// partServer is the tests' S3 server with a hook on every part upload:
// it counts the parts in flight, and refuses part number refuse (when
// set) as S3 refuses a request it does not allow.
type partServer struct {
	refuse   string
	delay    time.Duration
	inFlight atomic.Int32
	mu       sync.Mutex
	most     int32
}

func (p *partServer) store(t *testing.T) *S3Store {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		part := r.URL.Query().Get("partNumber")
		if r.Method == http.MethodPut && part != "" {
			n := p.inFlight.Add(1)
			defer p.inFlight.Add(-1)
			p.mu.Lock()
			p.most = max(p.most, n)
			p.mu.Unlock()
			time.Sleep(p.delay)
			if part == p.refuse {
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
				return
			}
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	st, err := NewS3Store(Location{Scheme: "s3", Bucket: "backups", Prefix: "team/db"}, s3Config(srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	if err != nil {
		t.Fatal(err)
	}
	st.PartSize = 5 << 20
	return st
}

// leftovers are the objects and the multipart uploads not completed nor
// aborted under the store's prefix.
func leftovers(t *testing.T, st *S3Store) []string {
	t.Helper()
	ctx := context.Background()
	keys, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for up := range st.client.ListIncompleteUploads(ctx, st.bucket, st.prefix, true) {
		if up.Err != nil {
			t.Fatal(up.Err)
		}
		keys = append(keys, "upload of "+up.Key)
	}
	return keys
}

// Parts go up partsInFlight at a time, no more, and the object is whole.
func TestS3PartsInFlight(t *testing.T) {
	ps := &partServer{delay: 100 * time.Millisecond}
	st := ps.store(t)
	data := payload(42 << 20) // 9 parts
	m, err := Take(context.Background(), st, "db", "PostgresCluster", bytesSource{data: data}, clock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if ps.most < 2 || ps.most > maxPartsInFlight {
		t.Fatalf("%d parts in flight at most, want 2 to %d", ps.most, maxPartsInFlight)
	}
	r, err := OpenData(context.Background(), st, m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(data)) {
		t.Fatalf("read back %d bytes: %v", n, err)
	}
}

// A part the endpoint refuses, a source that fails, a context that ends:
// each aborts the multipart upload, leaving no object and no upload.
func TestS3UploadFailuresLeaveNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		refuse string
		src    func(cancel func()) Source
		want   string
	}{
		{"a part is refused", "3", func(func()) Source { return bytesSource{data: payload(42 << 20)} }, "AccessDenied"},
		{"the source fails", "", func(func()) Source { return bytesSource{data: payload(42 << 20), failAfter: 27 << 20} }, "connection to the member was lost"},
		{"the context ends", "", func(cancel func()) Source { return cancelingSource{after: 17 << 20, cancel: cancel} }, context.Canceled.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := &partServer{refuse: c.refuse, delay: 20 * time.Millisecond}
			st := ps.store(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := Take(ctx, st, "db", "PostgresCluster", c.src(cancel), clock(time.Now()))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if left := leftovers(t, st); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

// cancelingSource streams until its context ends, ending it itself after
// some bytes, as a runtime shutting down would.
type cancelingSource struct {
	after  int
	cancel func()
}

func (s cancelingSource) Stream(ctx context.Context, w io.Writer, _ *Manifest) error {
	chunk := payload(32 << 10)
	for n := 0; ; n += len(chunk) {
		if n >= s.after {
			s.cancel()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
}

// The parts in flight hold at most uploadMemory, or one part.
func TestS3PartsInFlightFitTheMemory(t *testing.T) {
	for _, c := range []struct {
		partSize uint64
		want     uint
	}{{5 << 20, 4}, {16 << 20, 4}, {64 << 20, 4}, {100 << 20, 2}, {128 << 20, 2}, {200 << 20, 1}, {5 << 30, 1}} {
		if got := (&S3Store{PartSize: c.partSize}).partsInFlight(); got != c.want {
			t.Errorf("part size %d MiB: %d parts in flight, want %d", c.partSize>>20, got, c.want)
		}
	}
}

// A manifest-sized object goes up in one PUT, not a multipart upload.
func TestS3SmallObjectInOnePut(t *testing.T) {
	ps := &partServer{}
	st := ps.store(t)
	if _, err := st.Put(context.Background(), "db/x/manifest.json", strings.NewReader("{}\n")); err != nil {
		t.Fatal(err)
	}
	if ps.most != 0 {
		t.Fatalf("a small object went up in parts")
	}
	if _, err := st.Put(context.Background(), "db/x/data", io.LimitReader(strings.NewReader("{}\n"), 3)); err != nil {
		t.Fatal(err)
	}
	if ps.most != 1 {
		t.Fatalf("a stream of unknown length went up in %d parts at most, want 1", ps.most)
	}
}
