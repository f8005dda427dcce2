package backup

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// An object written through Create appears whole at Commit, and not
// before; one aborted leaves nothing. The sizes cross the S3 store's
// part boundaries (5 MiB parts) every way they can.
func TestCreateOnEachStore(t *testing.T) {
	const part = 5 << 20
	for _, c := range []struct {
		name  string
		size  int
		piece int // the writes' size; 0 writes it through Put
		abort bool
	}{
		{"empty", 0, 1, false},
		{"one byte", 1, 1, false},
		{"under a part", part - 1, 32 << 10, false},
		{"exactly one part", part, 32 << 10, false},
		{"exactly three parts", 3 * part, 1 << 20, false},
		{"three parts and a bit, in odd pieces", 3*part + 7, 32<<10 + 5, false},
		{"a write larger than two parts", 2*part + 100, 2*part + 50, false},
		{"Put: exactly two parts", 2 * part, 0, false},
		{"Put: two parts and a bit", 2*part + 1, 0, false},
		{"aborted after three parts", 3*part + 7, 1 << 20, true},
	} {
		for name, st := range stores(t) {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				ctx := context.Background()
				data := payload(c.size)
				n, err := writeObject(ctx, st, "db/x/data", data, c.piece, c.abort)
				if err != nil || n != int64(len(data)) && !c.abort {
					t.Fatalf("wrote %d bytes of %d: %v", n, len(data), err)
				}
				keys, err := st.List(ctx, "db/")
				if err != nil {
					t.Fatal(err)
				}
				if c.abort {
					if len(keys) != 0 {
						t.Fatalf("an aborted object left %v", keys)
					}
					if s3, ok := st.(*S3Store); ok && len(leftovers(t, s3)) != 0 {
						t.Fatalf("an aborted object left %v", leftovers(t, s3))
					}
					return
				}
				r, err := st.Get(ctx, "db/x/data")
				if err != nil {
					t.Fatal(err)
				}
				back, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(back, data) {
					t.Fatalf("read back %d bytes of %d: %v", len(back), len(data), err)
				}
			})
		}
	}
}

// writeObject writes data under key in pieces of piece bytes through
// Create, or through Put when piece is 0, and commits or aborts it.
func writeObject(ctx context.Context, st Store, key string, data []byte, piece int, abort bool) (int64, error) {
	if piece == 0 {
		return st.Put(ctx, key, io.LimitReader(bytes.NewReader(data), int64(len(data)))) // no Len: a stream
	}
	o, err := st.Create(ctx, key)
	if err != nil {
		return 0, err
	}
	var n int64
	for rest := data; len(rest) > 0; {
		k, err := o.Write(rest[:min(piece, len(rest))])
		n += int64(k)
		if err != nil {
			o.Abort()
			return n, err
		}
		rest = rest[k:]
	}
	if abort {
		o.Abort()
		return n, nil
	}
	return o.Commit()
}

// An object is ended once: no write, commit or abort counts after it.
func TestObjectEndsOnce(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			o, err := st.Create(ctx, "db/x/data")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.Write([]byte("abc")); err != nil {
				t.Fatal(err)
			}
			if n, err := o.Commit(); err != nil || n != 3 {
				t.Fatalf("commit: %d, %v", n, err)
			}
			o.Abort() // does nothing
			if _, err := o.Commit(); err == nil || !strings.Contains(err.Error(), "ended before") {
				t.Fatalf("a second commit: %v", err)
			}
			if keys, _ := st.List(ctx, "db/"); len(keys) != 1 {
				t.Fatalf("after an abort of a committed object: %v", keys)
			}
		})
	}
}

// A context that ends stops the writes and the commit; nothing appears.
func TestObjectStopsWithItsContext(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			o, err := st.Create(ctx, "db/x/data")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.Write(payload(6 << 20)); err != nil {
				t.Fatal(err)
			}
			cancel()
			_, werr := o.Write(payload(6 << 20))
			_, cerr := o.Commit()
			if !errors.Is(werr, context.Canceled) || !errors.Is(cerr, context.Canceled) {
				t.Fatalf("write %v, commit %v; want both canceled", werr, cerr)
			}
			if keys, _ := st.List(context.Background(), "db/"); len(keys) != 0 {
				t.Fatalf("left %v", keys)
			}
			if s3, ok := st.(*S3Store); ok && len(leftovers(t, s3)) != 0 {
				t.Fatalf("left %v", leftovers(t, s3))
			}
		})
	}
}
