package backup

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

const (
	testAccessKey = "cairn-test-key"
	testSecretKey = "cairn-test-secret"
)

// s3Server is a real S3-protocol server on loopback (gofakes3 over
// HTTPS) with one bucket. It refuses requests signed with another access
// key, as S3 does with InvalidAccessKeyId.
func s3Server(t *testing.T, bucket string) (string, []byte) {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+testAccessKey+"/") {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`)
			return
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv.URL, ca
}

func s3Config(endpoint string, ca []byte) S3Config {
	return S3Config{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, CABundle: ca}
}

// stores are the two kinds of store every behaviour is checked on.
func stores(t *testing.T) map[string]Store {
	s3, err := NewS3Store(Location{Scheme: "s3", Bucket: "backups", Prefix: "team/db"}, s3Config(s3Server(t, "backups")))
	if err != nil {
		t.Fatal(err)
	}
	s3.PartSize = 5 << 20 // S3's smallest part, so a few MiB make a multipart upload
	return map[string]Store{"file": &FileStore{Root: t.TempDir()}, "s3": s3}
}

// bytesSource streams data, failing after failAfter bytes when set.
type bytesSource struct {
	data      []byte
	failAfter int
}

func (s bytesSource) Stream(_ context.Context, w io.Writer, m *Manifest) error {
	m.Source, m.Version = "db-1", "15.18"
	if s.failAfter > 0 {
		if _, err := w.Write(s.data[:s.failAfter]); err != nil {
			return err
		}
		return errors.New("connection to the member was lost")
	}
	_, err := w.Write(s.data)
	return err
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func clock(start time.Time) func() time.Time {
	t := start
	return func() time.Time { t = t.Add(time.Second); return t }
}

func TestTakeListOpenOnEachStore(t *testing.T) {
	ctx := context.Background()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			now := clock(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))
			data := payload(12 << 20)
			// An upload cut off halfway leaves nothing that looks complete.
			if _, err := Take(ctx, st, "db", "PostgresCluster", bytesSource{data: data, failAfter: 7 << 20}, now); err == nil || !strings.Contains(err.Error(), "connection to the member was lost") {
				t.Fatalf("cut-off backup: %v", err)
			}
			if all, err := List(ctx, st, "db"); err != nil || len(all) != 0 {
				t.Fatalf("after a cut-off backup: %v %v", all, err)
			}
			// Not even its data: the file was never renamed into place, the
			// multipart upload was aborted.
			if keys, err := st.List(ctx, "db/"); err != nil || len(keys) != 0 {
				t.Fatalf("objects after a cut-off backup: %v %v", keys, err)
			}
			// The next run succeeds.
			m, err := Take(ctx, st, "db", "PostgresCluster", bytesSource{data: data}, now)
			if err != nil {
				t.Fatal(err)
			}
			if m.Size != int64(len(data)) || m.Source != "db-1" || m.Version != "15.18" || !m.Finished.After(m.Started) {
				t.Fatalf("manifest: %+v", m)
			}
			got, err := Find(ctx, st, "db", "latest")
			if err != nil || got.ID != m.ID || got.CRC64NVME != m.CRC64NVME || m.CRC64NVME == "" {
				t.Fatalf("latest: %+v %v", got, err)
			}
			r, err := OpenData(ctx, st, got)
			if err != nil {
				t.Fatal(err)
			}
			back, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(back, data) {
				t.Fatalf("data read back: %d bytes, %v", len(back), err)
			}
		})
	}
}

// A store whose data no longer matches its manifest fails the read.
func TestOpenDataChecksTheManifest(t *testing.T) {
	ctx := context.Background()
	st := &FileStore{Root: t.TempDir()}
	m, err := Take(ctx, st, "db", "EtcdCluster", bytesSource{data: payload(1000)}, clock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, Key("db", m.ID)+"/data", bytes.NewReader(payload(999))); err != nil {
		t.Fatal(err)
	}
	// Refused at the open (the store knows the object's size) or at
	// the read.
	r, err := OpenData(ctx, st, m)
	if err == nil {
		_, err = io.ReadAll(r)
		r.Close()
	}
	if !errors.Is(err, errIncomplete) {
		t.Fatalf("tampered data: %v", err)
	}
}

func TestRetentionExpired(t *testing.T) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var all []Manifest
	for i := range 5 { // finished on days 1..5
		all = append(all, Manifest{ID: fmt.Sprint(i), Finished: base.AddDate(0, 0, i)})
	}
	now := base.AddDate(0, 0, 5)
	for _, c := range []struct {
		name string
		r    Retention
		all  []Manifest
		want string
	}{
		{"keep all", Retention{}, all, ""},
		{"count 2", Retention{Count: 2}, all, "0,1,2"},
		{"count 1", Retention{Count: 1}, all, "0,1,2,3"},
		{"count above what there is", Retention{Count: 9}, all, ""},
		{"max age 2 days", Retention{MaxAge: 48 * time.Hour}, all, "0,1,2"},
		{"age or count, whichever deletes more", Retention{Count: 4, MaxAge: 72 * time.Hour}, all, "0,1"},
		{"the newest is kept however old", Retention{MaxAge: time.Hour}, all, "0,1,2,3"},
		{"one backup", Retention{Count: 1, MaxAge: time.Hour}, all[:1], ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, m := range c.r.Expired(c.all, now) {
				got = append(got, m.ID)
			}
			if strings.Join(got, ",") != c.want {
				t.Fatalf("expired %v, want %s", got, c.want)
			}
		})
	}
}

func TestPruneKeepsTheRightSet(t *testing.T) {
	ctx := context.Background()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			now := clock(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))
			var ids []string
			for i := range 4 {
				m, err := Take(ctx, st, "db", "EtcdCluster", bytesSource{data: payload(100 + i)}, now)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, m.ID)
			}
			// A leftover of a cut-off upload between two complete backups.
			if _, err := st.Put(ctx, Key("db", ids[1]+"x")+"/data", bytes.NewReader(payload(10))); err != nil {
				t.Fatal(err)
			}
			deleted, err := Prune(ctx, st, "db", Retention{Count: 2}, now())
			if err != nil || strings.Join(deleted, ",") != ids[0]+","+ids[1] {
				t.Fatalf("deleted %v %v, want the two oldest", deleted, err)
			}
			all, _ := List(ctx, st, "db")
			if len(all) != 2 || all[0].ID != ids[2] || all[1].ID != ids[3] {
				t.Fatalf("kept %+v", all)
			}
			keys, _ := st.List(ctx, "db/")
			if len(keys) != 4 {
				t.Fatalf("objects left: %v", keys)
			}
		})
	}
}

// Bad input: each a clear error, and nothing complete-looking or deleted.
func TestStoreErrors(t *testing.T) {
	ctx := context.Background()
	endpoint, ca := s3Server(t, "backups")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, c := range []struct {
		name     string
		loc      Location
		cfg      S3Config
		want     string
		withheld string
	}{
		{"unreachable endpoint", Location{Scheme: "s3", Bucket: "backups"}, s3Config(closed.URL, ca), "cannot be reached", ""},
		{"wrong credentials", Location{Scheme: "s3", Bucket: "backups"}, S3Config{Endpoint: endpoint, AccessKeyID: "other", SecretAccessKey: "hunter2", CABundle: ca}, "credentials were refused", "hunter2"},
		{"no such bucket", Location{Scheme: "s3", Bucket: "missing"}, s3Config(endpoint, ca), "bucket does not exist", testSecretKey},
		{"bad endpoint", Location{Scheme: "s3", Bucket: "backups"}, S3Config{Endpoint: "ftp://x"}, "want http(s)://host", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := Open(c.loc, c.cfg)
			if err == nil {
				_, err = Take(ctx, st, "db", "EtcdCluster", bytesSource{data: payload(10)}, clock(time.Now()))
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || (c.withheld != "" && strings.Contains(err.Error(), c.withheld)) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	st := &FileStore{Root: t.TempDir()}
	for _, key := range []string{"../x", "/etc/passwd", "a/../../b", ""} {
		if _, err := st.Put(ctx, key, strings.NewReader("x")); err == nil {
			t.Errorf("key %q accepted", key)
		}
	}
}

func TestParseLocation(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"s3://my-backup-bucket/postgres", "s3://my-backup-bucket/postgres", ""},
		{"s3://bucket", "s3://bucket", ""},
		{"file:///var/backups", "file:///var/backups", ""},
		{"file://relative/x", "", "absolute"},
		{"s3://Bad_Bucket/x", "", "bucket name"},
		{"gs://b/x", "", "want s3://"},
	} {
		l, err := ParseLocation(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || l.String() != c.want {
			t.Errorf("%s: %v %v", c.in, l, err)
		}
	}
}

// failingGets fails reading one key, as a store answering 503 would.
type failingGets struct {
	Store
	key string
}

func (f failingGets) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if key == f.key {
		return nil, errors.New("503 Service Unavailable")
	}
	return f.Store.Get(ctx, key)
}

// A manifest that cannot be read stops retention: a backup it cannot
// look at is neither expired nor taken for a leftover.
func TestPruneDeletesNothingItCannotRead(t *testing.T) {
	ctx := context.Background()
	st := &FileStore{Root: t.TempDir()}
	now := clock(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))
	var ids []string
	for i := range 3 {
		m, err := Take(ctx, st, "db", "EtcdCluster", bytesSource{data: payload(10 + i)}, now)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	flaky := failingGets{Store: st, key: Key("db", ids[1]) + "/manifest.json"}
	if deleted, err := Prune(ctx, flaky, "db", Retention{Count: 1}, now()); err == nil || len(deleted) != 0 {
		t.Fatalf("prune with an unreadable manifest: deleted %v, %v", deleted, err)
	}
	if keys, _ := st.List(ctx, "db/"); len(keys) != 6 {
		t.Fatalf("objects left: %v", keys)
	}
}
