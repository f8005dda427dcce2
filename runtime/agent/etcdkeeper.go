package agent

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/certs"
)

// etcdInterval is the etcd keeper's default time between passes.
const etcdInterval = 2 * time.Second

// Etcd is the KeeperFactory of etcd clusters: the membership keeper
// (Membership) of cfg's cluster, reached at cfg.EtcdEndpoints, with the
// cairn_etcd_* metrics.
func Etcd(client kubernetes.Interface, cfg Config) (Keeper, error) {
	m := &Membership{Endpoints: cfg.EtcdEndpoints, Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster,
		Port: cfg.EtcdPort, Log: cfg.Log, interval: cfg.Interval,
		Certs: &certs.Keeper{Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, App: contract.AppEtcd,
			IPs: cfg.EtcdServerIPs, Lifetime: cfg.CertLifetime, Log: cfg.Log}}
	if len(m.Endpoints) == 0 {
		// The client Service, over TLS unless the cluster's config turns
		// it off (keepTLS): no other client is given one.
		m.Endpoints = []string{fmt.Sprintf("%s.%s.svc:%d", contract.EtcdClientService(cfg.Cluster), cfg.Namespace, contract.EtcdClientPort)}
	}
	if cfg.Metrics != nil {
		metrics, err := NewEtcdMetrics(cfg.Metrics, cfg.Cluster)
		if err != nil {
			return nil, err
		}
		m.Metrics = metrics
	}
	return m, nil
}

// Interval is the time between passes: 2s unless set.
func (m *Membership) Interval() time.Duration { return cmp.Or(m.interval, etcdInterval) }

// BackupSource picks any ready member, the highest ordinal first: a
// snapshot of any member is the whole cluster's.
func (m *Membership) BackupSource(ctx context.Context) (backup.Source, string, error) {
	ready, err := readyMembers(ctx, m.Client, m.Namespace, contract.AppEtcd, m.Cluster)
	if err != nil {
		return nil, "", err
	}
	if len(ready) == 0 {
		return nil, "", errNoMember
	}
	p := ready[0]
	endpoint := m.scheme() + "://" + p.Status.PodIP + ":" + strconv.Itoa(cmp.Or(m.Port, contract.EtcdClientPort))
	return backup.EtcdSource{Member: p.Name, Endpoint: endpoint, TLS: m.clientTLS()}, spec.EtcdKind, nil
}
