package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/crc64nvme"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/testbed"
)

// A data object whose store reports a size other than the manifest's is
// refused before a byte of it is read, with an error naming the object
// and both sizes; on each real store.
func TestOpenDataRefusesAnObjectOfAnotherSize(t *testing.T) {
	ctx := context.Background()
	for name, st := range stores(t) {
		for _, tt := range []struct {
			name   string
			stored int
		}{{"larger", 1<<20 + 7}, {"smaller", 1<<20 - 7}} {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				data := payload(1 << 20)
				id := "20261130T020000Z-" + map[string]string{"larger": "aaaaaa", "smaller": "bbbbbb"}[tt.name]
				m := putBackup(t, st, id, ManifestFormat, data, func(m *Manifest) {
					h := crc64nvme.New()
					h.Write(data)
					m.CRC64NVME = fmt.Sprintf("%x", h.Sum(nil))
				})
				// The object is replaced by one of another size; the
				// manifest stays.
				key := Key("db", id) + "/" + dataObject
				if _, err := st.Put(ctx, key, strings.NewReader(string(payload(tt.stored)))); err != nil {
					t.Fatal(err)
				}
				counted := &countingStore{Store: st}
				_, err := OpenData(ctx, counted, m)
				want := fmt.Sprintf("the data object %s is %d bytes; the manifest records %d", key, tt.stored, 1<<20)
				if !errors.Is(err, errIncomplete) || !strings.Contains(err.Error(), want) {
					t.Fatalf("open: %v, want an error saying %q", err, want)
				}
				if counted.read != 0 {
					t.Errorf("read %d bytes of an object refused by its size", counted.read)
				}
			})
		}
	}
}

// countingStore counts the bytes read from its objects.
type countingStore struct {
	Store
	read int64
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := c.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if s, ok := r.(sizedObject); ok {
		return countingSized{countingReader{r, &c.read}, s.Size()}, nil
	}
	return countingReader{r, &c.read}, nil
}

type countingReader struct {
	io.ReadCloser
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	*c.n += int64(n)
	return n, err
}

type countingSized struct {
	countingReader
	size int64
}

func (c countingSized) Size() int64 { return c.size }

// A file store's object that is not a regular file (a FIFO, which would
// hold the open until a writer comes, and no context reaches an open) is
// refused at once, naming it.
func TestFileStoreGetRefusesAFIFO(t *testing.T) {
	root := t.TempDir()
	st := &FileStore{Root: root}
	p := filepath.Join(root, "db", "20261130T020000Z-aaaaaa", dataObject)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		r, err := st.Get(context.Background(), "db/20261130T020000Z-aaaaaa/"+dataObject)
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), p+" is not a regular file (p") {
			t.Fatalf("get of a FIFO: %v", err)
		}
	case <-time.After(time.Minute):
		// Not a timed assertion: a guard that ends a Get stuck in open(2)
		// (it waits for ever) by opening the FIFO's other end.
		w, _ := os.OpenFile(p, os.O_WRONLY, 0)
		defer w.Close()
		t.Fatal("Get waited on a FIFO for a writer")
	}
}

// cancelAtEnd is a store whose data object cancels the restore's
// context when its last byte has been read: the moment a stop request
// comes after the data is in, before the restored copy is put in place.
type cancelAtEnd struct {
	Store
	cancel context.CancelFunc
}

func (c cancelAtEnd) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := c.Store.Get(ctx, key)
	if err != nil || !strings.HasSuffix(key, "/"+dataObject) {
		return r, err
	}
	s, _ := r.(sizedObject)
	return &cancellingReader{ReadCloser: r, size: s, cancel: c.cancel}, nil
}

type cancellingReader struct {
	io.ReadCloser
	size   sizedObject
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if err == io.EOF {
		c.cancel()
	}
	return n, err
}

func (c *cancellingReader) Size() int64 { return c.size.Size() }

// A restore whose context ends (cairn restore's SIGTERM or SIGINT) after
// all its data was read never puts a data directory in place: it returns
// the context's error and removes its temporary folder, so no later run
// or PostgreSQL/etcd start finds a copy it would trust.
func TestRestoreStopsWhenItsContextEnds(t *testing.T) {
	for _, tt := range []struct {
		kind    string
		take    func(t *testing.T, st Store) Manifest
		restore func(ctx context.Context, st Store, m Manifest, dir string) error
	}{
		{spec.PostgresKind, func(t *testing.T, st Store) Manifest {
			m, err := Take(context.Background(), st, "db", spec.PostgresKind, dataDir(), time.Now)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, func(ctx context.Context, st Store, m Manifest, dir string) error {
			_, err := RestorePostgres(ctx, st, m, PostgresRestore{DataDir: dir})
			return err
		}},
		{spec.EtcdKind, func(t *testing.T, st Store) Manifest {
			curl, cli := testbed.EtcdMember(t, "e-0", filepath.Join(t.TempDir(), "data"), "")
			if _, err := cli.Put(context.Background(), "k", "v"); err != nil {
				t.Fatal(err)
			}
			m, err := Take(context.Background(), st, "e", spec.EtcdKind, EtcdSource{Member: "e-0", Endpoint: curl}, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, func(ctx context.Context, st Store, m Manifest, dir string) error {
			peer := "http://127.0.0.1:" + strconv.Itoa(testbed.FreePort(t))
			return RestoreEtcd(ctx, st, m, EtcdRestore{DataDir: dir, Name: "e-0", PeerURL: peer, Token: "restored"})
		}},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			st := &FileStore{Root: t.TempDir()}
			m := tt.take(t, st)
			parent := t.TempDir()
			dir := filepath.Join(parent, "restored")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := tt.restore(ctx, cancelAtEnd{st, cancel}, m, dir)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("restore whose context ended: %v, want context.Canceled", err)
			}
			left, _ := os.ReadDir(parent)
			if len(left) != 0 {
				t.Errorf("a stopped restore left %v beside the data directory", left)
			}
			// The same restore, not stopped, completes: the stop was what
			// held it.
			if err := tt.restore(context.Background(), st, m, dir); err != nil {
				t.Fatalf("restore after the stop: %v", err)
			}
		})
	}
}
