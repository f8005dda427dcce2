package backup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/minio/crc64nvme"
)

// Source streams one backup of a database.
type Source interface {
	// Stream writes the backup to w and fills in what it learned: the
	// source member, version and kind-specific details.
	Stream(ctx context.Context, w io.Writer, m *Manifest) error
}

// Take streams a backup of cluster from src into st and writes its
// manifest last. Nothing is staged on local disk: the source writes
// straight into the store's object, on this goroutine. On any error no
// manifest is written, so no backup looks complete.
func Take(ctx context.Context, st Store, cluster, kind string, src Source, now func() time.Time) (Manifest, error) {
	m := Manifest{Format: ManifestFormat, Cluster: cluster, Kind: kind, Started: now().UTC()}
	m.ID = newID(m.Started)
	o, err := st.Create(ctx, Key(cluster, m.ID)+"/"+dataObject)
	if err != nil {
		return m, fmt.Errorf("backup %s of %s: %w", m.ID, cluster, err)
	}
	sum := &summingWriter{w: o, h: crc64nvme.New()}
	if err := src.Stream(ctx, sum, &m); err != nil {
		o.Abort()
		return m, fmt.Errorf("backup %s of %s: %w", m.ID, cluster, err)
	}
	n, err := o.Commit()
	if err != nil {
		return m, fmt.Errorf("backup %s of %s: %w", m.ID, cluster, err)
	}
	if n != sum.n {
		return m, fmt.Errorf("backup %s of %s: stored %d bytes of %d: %w", m.ID, cluster, n, sum.n, errIncomplete)
	}
	m.Size, m.CRC64NVME, m.Finished = n, hex.EncodeToString(sum.h.Sum(nil)), now().UTC()
	if err := writeManifest(ctx, st, m); err != nil {
		return m, fmt.Errorf("backup %s of %s: write manifest: %w", m.ID, cluster, err)
	}
	return m, nil
}

// newID is a backup ID that sorts by start time: 20261130T020000Z-1a2b3c.
func newID(t time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
