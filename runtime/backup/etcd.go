package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// EtcdSource snapshots one etcd member through the client's maintenance
// API; the snapshot is a point in time of the whole key space.
type EtcdSource struct {
	// Member is the member's name and Endpoint its client URL.
	Member, Endpoint string
	DialTimeout      time.Duration
}

// Stream implements Source.
func (s EtcdSource) Stream(ctx context.Context, w io.Writer, m *Manifest) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: cmpOr(s.DialTimeout, 5*time.Second), Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd client for %s: %w", s.Member, err)
	}
	defer cli.Close()
	// etcd's snapshot stream does not say its revision; the member's
	// revision just before it began is a lower bound.
	st, err := cli.Status(ctx, s.Endpoint)
	if err != nil {
		return fmt.Errorf("status of %s: %w", s.Member, err)
	}
	resp, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return fmt.Errorf("snapshot of %s: %w", s.Member, err)
	}
	defer resp.Snapshot.Close()
	m.Source, m.Version = s.Member, cmpOrString(resp.Version, st.Version)
	m.Etcd = &EtcdDetails{Revision: max(resp.Header.GetRevision(), st.Header.GetRevision())}
	if _, err := io.Copy(w, resp.Snapshot); err != nil {
		return fmt.Errorf("snapshot of %s: %w", s.Member, err)
	}
	return nil
}

// EtcdRestore is where an etcd snapshot is restored: a new data directory
// for the first member of a new cluster.
type EtcdRestore struct {
	// DataDir must not exist yet.
	DataDir string
	// Name, PeerURL and Token are the restored member's name, peer URL and
	// the new cluster's initial token.
	Name, PeerURL, Token string
	// InitialCluster lists every member of the new cluster, name=peerURL,
	// comma-separated: each restores the same snapshot with the same list.
	// Empty makes a one-member cluster.
	InitialCluster string
}

// RestoreEtcd brings backup m back into r.DataDir and checks it: the data
// must match the manifest's size and SHA-256, and etcd's own hash inside
// the snapshot must hold. A failure leaves no data directory behind.
func RestoreEtcd(ctx context.Context, st Store, m Manifest, r EtcdRestore) error {
	if m.Kind != "EtcdCluster" {
		return fmt.Errorf("backup %s is of a %s, not an etcd cluster", m.ID, m.Kind)
	}
	if _, err := os.Stat(r.DataDir); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore into %s: it already exists", r.DataDir)
	}
	if err := os.MkdirAll(filepath.Dir(r.DataDir), 0o700); err != nil {
		return fmt.Errorf("restore into %s: %w", r.DataDir, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.DataDir), ".snapshot-*.db")
	if err != nil {
		return fmt.Errorf("restore into %s: %w", r.DataDir, err)
	}
	defer os.Remove(tmp.Name())
	err = copyData(ctx, st, m, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore %s into %s: %w", m.ID, r.DataDir, err)
	}
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath: tmp.Name(), Name: r.Name, OutputDataDir: r.DataDir, PeerURLs: []string{r.PeerURL},
		InitialCluster: cmpOrString(r.InitialCluster, r.Name+"="+r.PeerURL), InitialClusterToken: r.Token,
	})
	if err != nil {
		os.RemoveAll(r.DataDir)
		return fmt.Errorf("restore %s into %s: %w", m.ID, r.DataDir, err)
	}
	return nil
}

// copyData copies a backup's verified data to w.
func copyData(ctx context.Context, st Store, m Manifest, w io.Writer) error {
	data, err := OpenData(ctx, st, m)
	if err != nil {
		return err
	}
	defer data.Close()
	_, err = io.Copy(w, contextReader{ctx, data})
	return err
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func cmpOrString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
