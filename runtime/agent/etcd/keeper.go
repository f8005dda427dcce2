package etcd

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/certs"
)

// etcdInterval is the etcd keeper's default time between passes.
const etcdInterval = 2 * time.Second

// Config is what the etcd keeper needs besides the agent's Config.
type Config struct {
	// Endpoints are the client endpoints the membership keeper dials
	// (empty: the cluster's client Service,
	// <cluster>-client.<namespace>.svc:2379).
	Endpoints []string
	// Port is the members' client port backups use (2379 when zero).
	Port int
	// ServerIPs are addresses the members' certificate carries besides
	// their DNS names, for members reached by address (a cluster without
	// DNS, as the test beds are); empty in Kubernetes.
	ServerIPs []net.IP
}

var _ agent.KeeperFactory = Config{}.Keeper

// Keeper is the agent.KeeperFactory of etcd clusters: the membership
// keeper (Membership) of cfg's cluster, reached at c.Endpoints, with the
// cairn_etcd_* metrics.
func (c Config) Keeper(client kubernetes.Interface, cfg agent.Config) (agent.Keeper, error) {
	m := &Membership{Endpoints: c.Endpoints, Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster,
		Port: c.Port, Log: cfg.Log, interval: cfg.Interval,
		Certs: &certs.Keeper{Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, App: contract.AppEtcd,
			IPs: c.ServerIPs, Lifetime: cfg.CertLifetime, Log: cfg.Log}}
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

// ForgetObservations drops what the metrics observed while the replica
// led (agent.Observer).
func (m *Membership) ForgetObservations() { m.Metrics.forget() }

// Interval is the time between passes: 2s unless set.
func (m *Membership) Interval() time.Duration { return cmp.Or(m.interval, etcdInterval) }

// BackupSource picks any ready member, the highest ordinal first: a
// snapshot of any member is the whole cluster's.
func (m *Membership) BackupSource(ctx context.Context) (backup.Source, string, error) {
	ready, err := agent.ReadyMembers(ctx, m.Client, m.Namespace, contract.AppEtcd, m.Cluster)
	if err != nil {
		return nil, "", err
	}
	if len(ready) == 0 {
		return nil, "", agent.ErrNoMember
	}
	p := ready[0]
	endpoint := m.scheme() + "://" + p.Status.PodIP + ":" + strconv.Itoa(cmp.Or(m.Port, contract.EtcdClientPort))
	return backup.EtcdSource{Member: p.Name, Endpoint: endpoint, TLS: m.clientTLS()}, spec.EtcdKind, nil
}
