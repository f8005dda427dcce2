package main

import (
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/agent/postgres"
)

// postgresRuntime is the PostgreSQL row's part of `cairn runtime`: the
// members' port and the failover timings, from its flags.
type postgresRuntime struct{ cfg postgres.Config }

func newPostgresRuntime() kindRuntime { return &postgresRuntime{} }

func (r *postgresRuntime) addFlags(f *pflag.FlagSet) {
	f.IntVar(&r.cfg.Port, "postgres-port", contract.PostgresPort, "the members' PostgreSQL port")
	f.DurationVar(&r.cfg.Failover.After, "failover-after", 2*time.Second, "PostgreSQL: fail over from a primary that is down (refuses connections, pod or container gone) for this long")
	f.DurationVar(&r.cfg.Failover.AfterTimeouts, "failover-after-timeouts", 10*time.Second, "PostgreSQL: fail over from a primary that only does not answer in time for this long")
	f.DurationVar(&r.cfg.Failover.Recovery, "failover-after-recovery", 10*time.Second, "PostgreSQL, asynchronous replication: fail over from a primary whose server is in crash recovery in place (its instance manager restarted it after a crash) for this long; at least --failover-after")
	f.DurationVar(&r.cfg.Failover.LeaseTTL, "lease-ttl", contract.PostgresLeaseTTL, "PostgreSQL: the members' --lease-ttl; a fenced primary that does not answer is replaced only after it plus 3s from its fence and the failsafe's last detach")
}

func (r *postgresRuntime) keeper(client kubernetes.Interface, cfg agent.Config) (agent.Keeper, error) {
	return r.cfg.Keeper(client, cfg)
}
