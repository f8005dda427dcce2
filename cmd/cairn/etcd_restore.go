package main

import (
	"cmp"
	"context"
	"errors"
	"io"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// etcdRestorer restores an etcd snapshot as the first member of a new
// cluster.
var etcdRestorer = restorer{
	check: func(o restoreOptions) error {
		if o.peerURL == "" {
			return errors.New("an etcd restore needs --peer-url")
		}
		return nil
	},
	run: func(ctx context.Context, _ io.Writer, st backup.Store, m backup.Manifest, o restoreOptions) error {
		name, token := cmp.Or(o.name, o.cluster+"-0"), cmp.Or(o.token, o.cluster+"-restored")
		return backup.RestoreEtcd(ctx, st, m, backup.EtcdRestore{DataDir: o.dataDir, Name: name, PeerURL: o.peerURL, Token: token})
	},
	example: `  # an etcd backup, as the first member of a new cluster
  cairn restore --location file:///backups --cluster my-etcd-cluster --kind EtcdCluster --backup 20261130T020000Z-1a2b3c \
    --data-dir /var/lib/etcd-restore --peer-url https://my-etcd-cluster-0.my-etcd-cluster:2380`,
}
