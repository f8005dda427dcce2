package certs

import (
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// etcdLeaves are an etcd cluster's: a peer certificate, which the members
// serve and present to each other (for the Keeper's IPs too), and root's
// client certificate.
func etcdLeaves(k *Keeper) []leaf {
	names, ips := contract.EtcdServerNames(k.Cluster, k.Namespace), k.IPs
	return []leaf{{
		name: contract.ServerTLSSecret(k.Cluster),
		want: pki.Want{DNSNames: names, IPs: ips, Peer: true},
		issue: func(ca *pki.CA, now time.Time, lifetime time.Duration) (pki.Leaf, error) {
			return ca.IssuePeer(names, ips, now, lifetime)
		},
	}, clientLeaf(k.Cluster, contract.EtcdClientCommonName)}
}
