// Package postgres is the runtime's keeper of PostgreSQL clusters (Roles,
// built by Config.Keeper, an agent.KeeperFactory): what cannot wait for a
// pull request while the agent leads.
//
// It probes every member each pass (probe.go, read.go) and decides with a
// pure function (decidePostgres, decide.go), then acts (act.go, pass.go):
// keep the role labels true (the one primary cairn.dev/role=primary, the
// others replica, so the <cluster>-rw and -ro Services route to them) and
// synchronous_standby_names (syncnames.go, syncfence.go); fail over from
// a primary that is down (recorded in <cluster>-cairn-status first,
// fenced, the replica with the most WAL promoted; detach.go and the
// failsafe, failsafe.go); carry out a merged switchover step
// (switchover.go, switchact.go), and switch over from a primary whose
// node is cordoned, a drain (drain.go; the nodes are read in nodes.go);
// hand a primary's clean stop over at once (cleanstop.go); report the
// members' config (config.go),
// WAL a replica lost (walgone.go) and the TLS certificates it issues
// (tls.go). Events and cairn_postgres_* metrics (metrics.go;
// docs/runtime.md, docs/metrics.md).
//
// Imports: runtime/agent (the Keeper contract, the member pods, Events),
// pgx, client-go, prometheus, runtime/backup, runtime/certs, planner/spec
// and planner/contract; never runtime/agent/etcd, the planner's logic,
// the renderer or the publisher.
package postgres
