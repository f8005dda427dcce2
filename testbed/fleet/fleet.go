package fleet

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/testbed"
)

// Kind is a cluster's kind, as specs and the live state name it.
type Kind string

const (
	Etcd     Kind = spec.EtcdKind
	Postgres Kind = spec.PostgresKind
)

// Change is what a cluster's spec asks of what runs.
type Change string

const (
	// Converged: the spec is what runs; its plan has no step.
	Converged Change = "converged"
	// ScaleOut: two members more than run (two steps, one a member).
	ScaleOut Change = "scale-out"
	// MinorUpgrade: a newer etcd patch release, or a PostgreSQL minor
	// release, rolled out one member at a time.
	MinorUpgrade Change = "minor-upgrade"
	// StorageGrowth: twice the volume size that runs (one step).
	StorageGrowth Change = "storage-growth"
	// Create: nothing runs yet.
	Create Change = "create"
)

// Changes are the changes with a step to take, in the order a fleet's
// share of them is dealt.
var Changes = []Change{ScaleOut, MinorUpgrade, StorageGrowth, Create}

// convergedPercent of each kind's clusters are converged; the rest are
// dealt evenly over Changes.
const convergedPercent = 40

// nextVersion is the version a MinorUpgrade moves to from each version
// a cluster may run.
var nextVersion = map[string]string{"3.5.17": "3.5.21", "3.5.21": "3.5.23", "14.5": "14.9", "15.4": "15.6"}

// grown is the volume size a StorageGrowth asks for, from the size that
// runs.
var grown = map[string]string{"8Gi": "16Gi", "10Gi": "20Gi"}

// Cluster is one cluster of a fleet: its spec and what runs.
type Cluster struct {
	Name   string
	Kind   Kind
	Change Change
	// The spec: size (etcd) or instances (PostgreSQL), version, storage,
	// and whether it backs up.
	size             int
	version, storage string
	backup           bool
	// running is what runs; nil while nothing does.
	running *state
}

// state is what runs of a cluster.
type state struct {
	partition int
	// version is the StatefulSet's (its pod template's).
	version, storage string
	// bootstrap is the rendered bootstrap mode; "" says nothing.
	bootstrap string
	members   []member
}

type member struct{ version, role string }

// String is the cluster as cairn names it in outcomes: Kind/name.
func (c Cluster) String() string { return string(c.Kind) + "/" + c.Name }

// Path is the spec file's path in the repo.
func (c Cluster) Path() string {
	if c.Kind == Etcd {
		return "clusters/etcd/" + c.Name + ".yaml"
	}
	return "clusters/postgres/" + c.Name + ".yaml"
}

// Fleet is a GitOps repo of clusters and what runs of them.
type Fleet struct {
	// Clusters, sorted by name: the etcd clusters, then the PostgreSQL
	// ones.
	Clusters []Cluster
}

// New is a fleet of n clusters, (n+1)/2 etcd and n/2 PostgreSQL, with
// the changes dealt and the clusters' shapes drawn from seed.
func New(n int, seed uint64) *Fleet {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	f := &Fleet{}
	for _, k := range []struct {
		kind  Kind
		count int
	}{{Etcd, (n + 1) / 2}, {Postgres, n / 2}} {
		changes := deal(k.count, len(f.Clusters))
		r.Shuffle(len(changes), func(i, j int) { changes[i], changes[j] = changes[j], changes[i] })
		for i, ch := range changes {
			f.Clusters = append(f.Clusters, newCluster(r, k.kind, i, ch))
		}
	}
	return f
}

// deal is n changes: convergedPercent of them Converged (rounded), the
// rest spread over Changes; when they do not divide evenly, one more
// each for those from the dealt'th on (so that the PostgreSQL clusters,
// dealt after the etcd ones, get the others).
func deal(n, dealt int) []Change {
	converged := (n*convergedPercent + 50) / 100
	out := slices.Repeat([]Change{Converged}, converged)
	rest := n - converged
	for i, ch := range Changes {
		k := rest / len(Changes)
		if (i-dealt%len(Changes)+len(Changes))%len(Changes) < rest%len(Changes) {
			k++
		}
		out = append(out, slices.Repeat([]Change{ch}, k)...)
	}
	return out
}

func newCluster(r *rand.Rand, kind Kind, i int, ch Change) Cluster {
	c := Cluster{Kind: kind, Change: ch, backup: r.IntN(2) == 0}
	var runs int
	if kind == Etcd {
		c.Name, c.storage = fmt.Sprintf("etcd-%05d", i), "8Gi"
		c.version, runs = pick(r, "3.5.17", "3.5.21"), pick(r, 3, 5)
	} else {
		c.Name, c.storage = fmt.Sprintf("pg-%05d", i), "10Gi"
		c.version, runs = pick(r, "14.5", "15.4"), pick(r, 2, 3)
	}
	if ch == ScaleOut && kind == Etcd {
		runs -= 2 // 1 -> 3 or 3 -> 5: sizes stay odd
	}
	c.size = runs
	if ch == ScaleOut {
		c.size = runs + 2
	}
	if ch != Create {
		c.running = c.runningAs(runs, c.version, c.storage)
	}
	switch ch {
	case MinorUpgrade:
		c.version = nextVersion[c.version]
	case StorageGrowth:
		c.storage = grown[c.storage]
	}
	return c
}

// runningAs is what runs of c once created with n members: ordinal 0
// leads (etcd) or is the primary (PostgreSQL), every member ready.
func (c Cluster) runningAs(n int, version, storage string) *state {
	s := &state{version: version, storage: storage}
	for i := range n {
		s.members = append(s.members, member{version, c.role(i == 0)})
	}
	return s
}

func (c Cluster) role(first bool) string {
	switch {
	case c.Kind == Etcd && first:
		return "leader"
	case c.Kind == Etcd:
		return "follower"
	case first:
		return "primary"
	}
	return "replica"
}

func pick[T any](r *rand.Rand, v ...T) T { return v[r.IntN(len(v))] }

// Planned is how many clusters have a step to take.
func (f *Fleet) Planned() int { return len(f.Clusters) - f.Count(Converged) }

// Count is how many clusters were dealt ch.
func (f *Fleet) Count(ch Change) int {
	n := 0
	for _, c := range f.Clusters {
		if c.Change == ch {
			n++
		}
	}
	return n
}

// First is the first cluster, by name, of kind that was dealt ch.
func (f *Fleet) First(kind Kind, ch Change) (Cluster, bool) {
	for _, c := range f.Clusters {
		if c.Kind == kind && c.Change == ch {
			return c, true
		}
	}
	return Cluster{}, false
}

// Files are the repo's files, by path: one spec a cluster.
func (f *Fleet) Files() map[string]string {
	out := make(map[string]string, len(f.Clusters))
	for _, c := range f.Clusters {
		out[c.Path()] = c.spec()
	}
	return out
}

func (c Cluster) spec() string {
	var b strings.Builder
	if c.Kind == Etcd {
		fmt.Fprintf(&b, "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: %s\nspec:\n  size: %d\n", c.Name, c.size)
	} else {
		fmt.Fprintf(&b, "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata:\n  name: %s\nspec:\n  instances: %d\n", c.Name, c.size)
	}
	fmt.Fprintf(&b, "  version: %q\n  storage: %s\n", c.version, c.storage)
	if c.backup {
		fmt.Fprintf(&b, "  backup: {schedule: %q, storageLocation: %q}\n", c.schedule(), c.location())
	}
	return b.String()
}

func (c Cluster) schedule() string {
	if c.Kind == Etcd {
		return "0 3 * * *"
	}
	return "0 2 * * *"
}

func (c Cluster) location() string { return "s3://backups/" + c.Name }

// Live is the live state of the fleet, in the format of --live
// (docs/live-state.md).
func (f *Fleet) Live() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n")
	for _, c := range f.Clusters {
		if c.running != nil {
			c.writeLive(&b)
		}
	}
	return []byte(b.String())
}

func (c Cluster) writeLive(b *strings.Builder) {
	s := c.running
	fmt.Fprintf(b, "- kind: %s\n  name: %s\n  storage: %s\n  capacity: %s\n  network: %s\n", c.Kind, c.Name, s.storage, s.storage, contract.NetworkRestricted)
	memberTLS := ""
	switch c.Kind {
	case Etcd:
		// Created by cairn: TLS required of clients and peers.
		fmt.Fprintf(b, "  clusterVersion: %q\n  %s\n  tls: %s\n", s.version[:strings.LastIndex(s.version, ".")], testbed.EtcdLiveCompaction, contract.TLSRequire)
		memberTLS = ", tls: true, peerTLS: true"
	case Postgres:
		// Created by cairn: TLS required, every member serving it.
		fmt.Fprintf(b, "  tls: %s\n", contract.TLSRequire)
		memberTLS = ", tls: true"
	}
	if s.bootstrap != "" {
		fmt.Fprintf(b, "  bootstrap: %s\n", s.bootstrap)
	}
	fmt.Fprintf(b, "  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: %d, updatePartition: %d, version: %q}\n", len(s.members), s.partition, s.version)
	if c.backup {
		fmt.Fprintf(b, "  backup: {schedule: %q, timeZone: UTC, storageLocation: %q}\n", c.schedule(), c.location())
		if c.Kind == Postgres {
			// and the WAL archiving the policy renders, read back.
			b.WriteString("  parameters: {")
			for i, k := range slices.Sorted(maps.Keys(contract.PostgresArchiveSettings)) {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(b, "%s: %q", k, spec.ParamValue(contract.PostgresArchiveSettings[k]).Quoted())
			}
			b.WriteString("}\n")
		}
	}
	b.WriteString("  members:\n")
	for i, m := range s.members {
		fmt.Fprintf(b, "  - {name: %s-%d, version: %q, ready: true, role: %s%s}\n", c.Name, i, m.version, m.role, memberTLS)
	}
}
