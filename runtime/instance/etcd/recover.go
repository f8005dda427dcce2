package etcd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// recoverArgs carries out a merged recovery (Config.Recover) on this
// member's data, once, and returns the flags to start with; ok is false
// when nothing is pending: no recovery, one already carried out on this
// data (the marker beside the data directory says so), or one made moot
// because the cluster this member belongs to answers with quorum.
//
// The seed starts the new cluster: from the snapshot, restored as a
// one-member cluster with the recovery's token, or from its own data
// with --force-new-cluster, which drops every other member. Every other
// member waits for the new cluster to answer, moves its old data aside
// (never deleting it) and joins as a new member; the runtime promotes
// each learner in turn. No member ever starts from the old cluster's data
// while a recovery is pending, so the old cluster cannot come back beside
// the new one.
func (e *Manager) recoverArgs(ctx context.Context, hasData bool, cli *clientv3.Client, members []*etcdserverpb.Member, reachable bool) ([]string, bool, error) {
	r := e.Config.Recover
	if r == nil {
		return nil, false, nil
	}
	done, err := e.recovered(r.ID)
	if err != nil || done {
		return nil, false, err
	}
	log := e.Log.With("member", e.Name, "recovery", r.ID)
	if e.Name != r.Seed {
		switch {
		case !reachable:
			return nil, false, fmt.Errorf("%w: recovery %s: waiting for %s to start the recovered cluster", ErrNoCluster, r.ID, r.Seed)
		case e.startedIn(members):
			// The cluster that answers knows this member as one that has
			// run: the old cluster, with quorum again.
			log.Warn("the cluster answers with quorum and lists this member: the recovery is moot; starting as before")
			return nil, false, nil
		}
		if hasData {
			if err := instance.MoveAside(e.DataDir, log, "recovery "+r.ID+": this member rejoins the recovered cluster; keeping its old data aside"); err != nil {
				return nil, false, err
			}
		}
		if err := e.markRecovered(r.ID); err != nil {
			return nil, false, err
		}
		args, err := e.join(ctx, cli, members)
		return args, err == nil, err
	}
	if reachable {
		log.Warn("the other members answer with quorum: the recovery is moot; starting as before")
		return nil, false, nil
	}
	switch r.Mode {
	case contract.EtcdRecoverFromSnapshot:
		if hasData {
			if err := instance.MoveAside(e.DataDir, log, "recovery "+r.ID+": restoring a snapshot in place of this member's data; keeping the data aside"); err != nil {
				return nil, false, err
			}
		}
		st, m, err := instance.FindBackup(ctx, r.Snapshot)
		if err != nil {
			return nil, false, fmt.Errorf("recovery %s: %w", r.ID, err)
		}
		log.Warn("restoring a snapshot as a new one-member cluster", "backup", m.ID, "revision", revisionOf(m))
		if err := backup.RestoreEtcd(ctx, st, m, backup.EtcdRestore{DataDir: e.DataDir, Name: e.Name, PeerURL: e.PeerURL(e.Name), Token: r.Token}); err != nil {
			return nil, false, fmt.Errorf("recovery %s: %w", r.ID, err)
		}
		if err := e.markRecovered(r.ID); err != nil {
			return nil, false, err
		}
		return e.baseArgs(), true, nil
	case contract.EtcdRecoverFromMember:
		if !hasData {
			return nil, false, fmt.Errorf("recovery %s keeps the data of %s, and its data directory %s is empty: revert the step; a recovery from a snapshot is planned instead", r.ID, e.Name, e.DataDir)
		}
		// Marked before etcd starts: --force-new-cluster must run once.
		// A start cut off before etcd wrote the new membership leaves the
		// old one, and the member waits without quorum as before.
		if err := e.markRecovered(r.ID); err != nil {
			return nil, false, err
		}
		log.Warn("starting from this member's data as a new one-member cluster (--force-new-cluster)")
		return append(e.baseArgs(), "--force-new-cluster"), true, nil
	}
	return nil, false, fmt.Errorf("recovery %s: unknown mode %q", r.ID, r.Mode)
}

// startedIn reports whether members lists this member as one that has
// run (it published its client URLs).
func (e *Manager) startedIn(members []*etcdserverpb.Member) bool {
	peer := e.PeerURL(e.Name)
	return slices.ContainsFunc(members, func(m *etcdserverpb.Member) bool {
		return (m.Name == e.Name || slices.Contains(m.PeerURLs, peer)) && len(m.ClientURLs) > 0
	})
}

// markerPath is the recovery marker's path, beside the data directory:
// <data dir>.<contract.EtcdRecoveryMarker>.
func (e *Manager) markerPath() string {
	return strings.TrimRight(e.DataDir, "/") + "." + contract.EtcdRecoveryMarker
}

// recovered reports whether recovery id was carried out on this data.
func (e *Manager) recovered(id string) (bool, error) {
	data, err := os.ReadFile(e.markerPath())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the recovery marker: %w", err)
	}
	return strings.TrimSpace(string(data)) == id, nil
}

// markRecovered records recovery id as carried out, atomically.
func (e *Manager) markRecovered(id string) error {
	path := e.markerPath()
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write the recovery marker: %w", err)
	}
	_, err = f.WriteString(id + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write the recovery marker: %w", err)
	}
	return nil
}

func revisionOf(m backup.Manifest) int64 {
	if m.Etcd == nil {
		return 0
	}
	return m.Etcd.Revision
}
