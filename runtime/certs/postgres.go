package certs

import (
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// postgresLeaves are a PostgreSQL cluster's: a server certificate and the
// superuser's client certificate.
func postgresLeaves(k *Keeper) []leaf {
	names := contract.PostgresServerNames(k.Cluster, k.Namespace)
	return []leaf{{
		name: contract.ServerTLSSecret(k.Cluster),
		want: pki.Want{DNSNames: names},
		issue: func(ca *pki.CA, now time.Time, lifetime time.Duration) (pki.Leaf, error) {
			return ca.IssueServer(names, now, lifetime)
		},
	}, clientLeaf(k.Cluster, contract.PostgresSuperuser)}
}
