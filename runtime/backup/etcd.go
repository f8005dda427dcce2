package backup

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cairn-dev/cairn/planner/spec"
)

// EtcdSource snapshots one etcd member through the client's maintenance
// API; the snapshot is a point in time of the whole key space.
type EtcdSource struct {
	// Member is the member's name and Endpoint its client URL, which
	// may name the member by address: over TLS, the member's
	// certificate is verified against TLS.ServerName when it is set.
	Member, Endpoint string
	DialTimeout      time.Duration
	// TLS is the client configuration for a member that serves TLS; nil
	// for plain HTTP.
	TLS *tls.Config
}

// Stream implements Source.
func (s EtcdSource) Stream(ctx context.Context, w io.Writer, m *Manifest) error {
	dial := cmp.Or(s.DialTimeout, 5*time.Second)
	cfg := clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: dial, Logger: zap.NewNop(), TLS: s.TLS}
	if s.TLS != nil && s.TLS.ServerName != "" {
		// gRPC verifies the server against the dialled authority and
		// ignores tls.Config.ServerName: a member reached at its pod's
		// address (its certificate carries DNS names only) is verified
		// as the name the configuration gives only when that name is
		// the authority.
		cfg.DialOptions = []grpc.DialOption{grpc.WithAuthority(s.TLS.ServerName)}
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return fmt.Errorf("etcd client for %s: %w", s.Member, err)
	}
	defer cli.Close()
	// etcd's snapshot stream does not say its revision; the member's
	// revision just before it began is a lower bound. The status is
	// bounded: etcd's client retries a member it cannot reach (refused,
	// or a TLS handshake that fails) until its context ends, and a
	// backup must fail and say so rather than wait for ever.
	sctx, cancel := context.WithTimeout(ctx, 2*dial)
	st, err := cli.Status(sctx, s.Endpoint)
	cancel()
	if err != nil {
		return fmt.Errorf("status of %s at %s: %w", s.Member, s.Endpoint, err)
	}
	resp, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return fmt.Errorf("snapshot of %s: %w", s.Member, err)
	}
	defer resp.Snapshot.Close()
	m.Source, m.Version = s.Member, cmp.Or(resp.Version, st.Version)
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
// must match the manifest's size and checksum, and etcd's own hash inside
// the snapshot must hold. It restores into a temporary folder beside
// DataDir and renames it into place when whole, so a failure, a crash or
// ctx's end leaves no data directory behind.
func RestoreEtcd(ctx context.Context, st Store, m Manifest, r EtcdRestore) error {
	if m.Kind != spec.EtcdKind {
		return fmt.Errorf("backup %s is of a %s, not an etcd cluster", m.ID, m.Kind)
	}
	tmp, err := restoreDir(r.DataDir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	snap := filepath.Join(tmp, "snapshot.db")
	if err := writeData(ctx, st, m, snap); err != nil {
		return fmt.Errorf("restore %s into %s: %w", m.ID, r.DataDir, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("restore %s into %s: %w", m.ID, r.DataDir, err)
	}
	out := filepath.Join(tmp, "data")
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath: snap, Name: r.Name, OutputDataDir: out, PeerURLs: []string{r.PeerURL},
		InitialCluster: cmp.Or(r.InitialCluster, r.Name+"="+r.PeerURL), InitialClusterToken: r.Token,
	})
	if err == nil {
		// etcd's restore takes no context: a stop asked for while it ran
		// is seen here, and puts nothing in place.
		err = ctx.Err()
	}
	if err == nil {
		err = renameSynced(out, r.DataDir)
	}
	if err != nil {
		return fmt.Errorf("restore %s into %s: %w", m.ID, r.DataDir, err)
	}
	return nil
}

// writeData writes a backup's verified data to a new file at path.
func writeData(ctx context.Context, st Store, m Manifest, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = copyData(ctx, st, m, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
