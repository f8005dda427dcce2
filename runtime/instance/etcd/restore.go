package etcd

import (
	"context"
	"os"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// restore restores the create step's snapshot into the member's empty
// data directory, with every member of the create step in its initial
// cluster, so all of them start from the same snapshot as one cluster.
func (e *Manager) restore(ctx context.Context) error {
	st, m, err := instance.FindBackup(ctx, e.Config.Restore)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(e.DataDir); err != nil { // no member/ in it: nothing of etcd's
		return err
	}
	e.Log.Info("restoring the create step's snapshot", "member", e.Name, "backup", m.ID, "of", m.Cluster)
	return backup.RestoreEtcd(ctx, st, m, backup.EtcdRestore{DataDir: e.DataDir, Name: e.Name, PeerURL: e.PeerURL(e.Name),
		Token: e.Config.Token, InitialCluster: e.initialCluster()})
}
