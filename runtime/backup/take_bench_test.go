package backup

import (
	"context"
	"io"
	"testing"
	"time"
)

// chunkedSource streams size bytes in pieces of the size PostgreSQL's
// CopyData messages have (32 KiB), without a database.
type chunkedSource struct{ size int }

func (s chunkedSource) Stream(_ context.Context, w io.Writer, m *Manifest) error {
	m.Source, m.Version = "db-1", "15.18"
	chunk := payload(32 << 10)
	for n := 0; n < s.size; n += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkTakeSynthetic is Take's own cost, store by store, on 256 MiB
// from memory: the part of BenchmarkBaseBackup1GiB that is cairn's, for
// profiling without PostgreSQL.
//
//	go test ./runtime/backup -run '^$' -bench TakeSynthetic -cpuprofile cpu.out
func BenchmarkTakeSynthetic(b *testing.B) {
	ctx := context.Background()
	const size = 256 << 20
	for _, c := range []struct {
		name string
		st   func(b *testing.B) Store
	}{
		{"s3", func(b *testing.B) Store {
			endpoint, ca, _ := S3ServerForBench(b)
			return S3StoreForBench(b, endpoint, ca)
		}},
		{"file", func(b *testing.B) Store { return &FileStore{Root: b.TempDir()} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			st := c.st(b)
			b.SetBytes(size)
			for range b.N {
				m, err := Take(ctx, st, "db", "PostgresCluster", chunkedSource{size: size}, time.Now)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = st.Delete(ctx, Key("db", m.ID)+"/"+dataObject)
				_ = st.Delete(ctx, Key("db", m.ID)+"/"+manifestObject)
				b.StartTimer()
			}
		})
	}
}
