package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// ManifestFormat names the format of the manifests cairn writes: v2
// checks the data with CRC-64/NVME. Manifests of format v1 (SHA-256) are
// still read and verified; see checksum.go for why the checksum changed.
const (
	ManifestFormat   = "cairn.dev/backup/v2"
	manifestFormatV1 = "cairn.dev/backup/v1"
)

// Object names inside a backup's folder.
const (
	dataObject     = "data"
	manifestObject = "manifest.json"
)

// Manifest describes one complete backup; it is written last.
type Manifest struct {
	Format  string `json:"format"`
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
	// Kind is the spec's kind, as spec.Ref.Kind names it.
	Kind     string    `json:"kind"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Size and the checksum are those of the data object: CRC64NVME in
	// format v2 (hex, big-endian), SHA256 (hex) in format v1.
	Size      int64  `json:"size"`
	CRC64NVME string `json:"crc64nvme,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	// Source is the member the backup was read from.
	Source string `json:"source"`
	// Version is the database version the source runs.
	Version  string          `json:"version"`
	Etcd     *EtcdDetails    `json:"etcd,omitempty"`
	Postgres *PostgresDetail `json:"postgres,omitempty"`
	// Request is the on-demand request the backup serves: the ID of the
	// merged TakeBackup step (backup-before-15.4) whose later step's
	// rollback restores it. Empty for scheduled and manual backups.
	Request string `json:"request,omitempty"`
	// Pinned keeps the backup out of retention (see pin.go). It is set
	// with Request and cleared only by Release: cairn backup release.
	Pinned bool `json:"pinned,omitempty"`
}

// EtcdDetails are an etcd snapshot's facts.
type EtcdDetails struct {
	// Revision is the member's revision just before the snapshot began:
	// the snapshot holds every write up to it (and any that landed in
	// between).
	Revision int64 `json:"revision"`
}

// PostgresDetail are a base backup's facts.
type PostgresDetail struct {
	StartLSN string `json:"startLSN"`
	EndLSN   string `json:"endLSN"`
	Timeline int64  `json:"timeline"`
	// SystemID is the server's system identifier (IDENTIFY_SYSTEM), in
	// decimal: the WAL archive's folder (WALPrefix) that continues the
	// backup. Empty in backups taken before cairn archived WAL.
	SystemID string `json:"systemID,omitempty"`
	// WALSegmentSize is the server's wal_segment_size in bytes.
	WALSegmentSize int64 `json:"walSegmentSize,omitempty"`
}

// Key is the folder of backup id of cluster.
func Key(cluster, id string) string { return cluster + "/" + id }

// List returns the complete backups of cluster, oldest first. Backups
// without a manifest (cut off, or being written) are left out; a
// manifest that cannot be read (the store failed, or it is damaged) is an
// error, so that nothing deletes or skips a backup it could not look at.
func List(ctx context.Context, st Store, cluster string) ([]Manifest, error) {
	keys, err := st.List(ctx, cluster+"/")
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, k := range keys {
		id, ok := strings.CutSuffix(strings.TrimPrefix(k, cluster+"/"), "/"+manifestObject)
		if !ok || strings.Contains(id, "/") {
			continue
		}
		m, err := readManifest(ctx, st, cluster, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Manifest) int { return a.Finished.Compare(b.Finished) })
	return out, nil
}

// Find returns the complete backup id of cluster; id contract.RestoreLatest
// ("latest") is the newest.
func Find(ctx context.Context, st Store, cluster, id string) (Manifest, error) {
	if id != contract.RestoreLatest {
		return readManifest(ctx, st, cluster, id)
	}
	all, err := List(ctx, st, cluster)
	if err != nil {
		return Manifest{}, err
	}
	if len(all) == 0 {
		return Manifest{}, fmt.Errorf("cluster %s has no complete backup: %w", cluster, ErrNotFound)
	}
	return all[len(all)-1], nil
}

// FindBefore returns the newest complete backup of cluster that finished
// before t: the one a recovery to t replays the least WAL from.
func FindBefore(ctx context.Context, st Store, cluster string, t time.Time) (Manifest, error) {
	all, err := List(ctx, st, cluster)
	if err != nil {
		return Manifest{}, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Finished.Before(t) {
			return all[i], nil
		}
	}
	return Manifest{}, fmt.Errorf("cluster %s has no complete backup that finished before %s: %w", cluster, t.UTC().Format(time.RFC3339), ErrNotFound)
}

func readManifest(ctx context.Context, st Store, cluster, id string) (Manifest, error) {
	r, err := st.Get(ctx, Key(cluster, id)+"/"+manifestObject)
	if err != nil {
		return Manifest{}, fmt.Errorf("backup %s of %s: %w", id, cluster, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return Manifest{}, fmt.Errorf("backup %s of %s: read manifest: %w", id, cluster, err)
	}
	// Unknown fields are accepted: a newer cairn's manifest stays a
	// backup for an older runtime.
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("backup %s of %s: manifest: %w", id, cluster, err)
	}
	if m.Format != ManifestFormat && m.Format != manifestFormatV1 || m.ID != id || m.Cluster != cluster {
		return Manifest{}, fmt.Errorf("backup %s of %s: manifest names %s of %s in format %q", id, cluster, m.ID, m.Cluster, m.Format)
	}
	return m, nil
}

func writeManifest(ctx context.Context, st Store, m Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	_, err = st.Put(ctx, Key(m.Cluster, m.ID)+"/"+manifestObject, bytes.NewReader(append(data, '\n')))
	return err
}

// errIncomplete marks data that does not match its manifest.
var errIncomplete = errors.New("data does not match the manifest")
