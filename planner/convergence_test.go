package planner

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

var (
	etcdVersions = []string{"3.2.13", "3.2.32", "3.3.27", "3.4.37", "3.5.10", "3.5.21", "3.6.16", "3.7.3"}
	pgVersions   = []string{"13.9", "14.5", "14.9", "15.4", "16.2", "17.0", "18.4"}
	storages     = []string{"8Gi", "10Gi", "20Gi"}
	schedules    = []string{"", "0 2 * * *", "0 3 * * *"}
	// specResources are written as people write them; liveResources as
	// the API server writes them back (the first two equal the first two
	// of specResources).
	specResources = []string{"", "resources: {requests: {cpu: '0.5', memory: 1024Mi}}", "resources: {requests: {cpu: '1'}, limits: {memory: 2Gi}}"}
	liveResources = []*contract.Resources{nil, {Requests: contract.ResourceList{CPU: "500m", Memory: "1Gi"}}, {Requests: contract.ResourceList{CPU: "1"}, Limits: contract.ResourceList{Memory: "2Gi"}}}
	// specParameters mix reload-only (work_mem), restart-only
	// (shared_buffers) and hot-standby (max_connections) parameters, raised
	// and lowered; liveParameters are what a rendered config may set.
	specParameters = []string{"", "postgresql: {parameters: {work_mem: 8MB}}", "postgresql: {parameters: {work_mem: 8MB, shared_buffers: 256MB}}",
		"postgresql: {parameters: {max_connections: 200}}", "postgresql: {parameters: {max_connections: 50, work_mem: 4MB}}"}
	// specCompaction and specQuota are etcd's space settings as people
	// write them; liveCompaction and liveQuota what a rendered config may
	// set (nil and "": a cluster rendered before they were planned).
	specCompaction = []string{"", "compaction: {mode: periodic, retention: 2h}", "compaction: {mode: revision, retention: 10000}"}
	liveCompaction = []*live.Compaction{nil, {Mode: "periodic", Retention: "1h", Applied: true}, {Mode: "revision", Retention: "5000", Applied: true}}
	specQuota      = []string{"", "spaceQuota: 2Gi", "spaceQuota: 3Gi"}
	liveQuota      = []string{"", "2147483648", "4294967296"}
	liveParameters = []map[string]string{nil, {"work_mem": "'8MB'"}, {"shared_buffers": "'128MB'"}, {"max_connections": "'100'"}, {"max_connections": "'300'", "work_mem": "'4MB'"}}
)

type convergenceCase struct {
	desired  spec.Cluster
	observed *live.Cluster
}

func (c convergenceCase) String() string {
	return fmt.Sprintf("desired %+v\nobserved %+v", c.desired, c.observed)
}

func genEtcd(t testing.TB, r *rand.Rand) convergenceCase {
	sizes := []int{1, 3, 5, 7, 1, 3, 5, 7, 4, 8}
	var extra []string
	extra = append(extra, "storage: "+storages[r.IntN(len(storages))])
	if s := schedules[r.IntN(len(schedules))]; s != "" {
		extra = append(extra, fmt.Sprintf("backup: {schedule: %q, storageLocation: 's3://bkp/e'}", s))
	}
	if res := specResources[r.IntN(len(specResources))]; res != "" {
		extra = append(extra, res)
	}
	for _, l := range []string{specCompaction[r.IntN(len(specCompaction))], specQuota[r.IntN(len(specQuota))]} {
		if l != "" {
			extra = append(extra, l)
		}
	}
	c := convergenceCase{desired: etcdSpec(t, sizes[r.IntN(len(sizes))], etcdVersions[r.IntN(len(etcdVersions))], extra...)}
	if r.IntN(5) > 0 {
		n := 1 + r.IntN(7)
		c.observed = etcdLive(n, etcdVersions[r.IntN(len(etcdVersions))], r.IntN(n))
		c.observed.Storage = storages[r.IntN(len(storages))]
		c.observed.StatefulSet.Resources = liveResources[r.IntN(len(liveResources))]
		c.observed.Compaction = liveCompaction[r.IntN(len(liveCompaction))]
		c.observed.SpaceQuota = liveQuota[r.IntN(len(liveQuota))]
		if r.IntN(3) == 0 { // rendered before its NetworkPolicy
			c.observed.Network = ""
		}
		if r.IntN(4) == 0 { // rendered before read-only roots
			c.observed.StatefulSet.ReadOnlyRoot = false
		}
		// Some were rendered before TLS (off), or stopped half way
		// (accept, every member serving it).
		switch tls := contract.TLSModes[r.IntN(len(contract.TLSModes))]; tls {
		case contract.TLSOff, contract.TLSAccept:
			c.observed.TLS = strings.TrimPrefix(tls, contract.TLSOff)
			for i := range c.observed.Members {
				c.observed.Members[i].TLS, c.observed.Members[i].PeerTLS = contract.TLSOn(tls), false
			}
		}
		if r.IntN(4) == 0 { // its runtime rendered before its read-only root
			c.observed.Runtime.ReadOnlyRoot = false
		}
	}
	return c
}

func genPostgres(t testing.TB, r *rand.Rand) convergenceCase {
	n := []int{1, 2, 3, 5, 6, 0, 17}[r.IntN(7)]
	extra := []string{"storage: " + storages[r.IntN(len(storages))]}
	if n > 1 && r.IntN(2) == 0 {
		extra = append(extra, fmt.Sprintf("synchronousStandbys: %d", r.IntN(n)))
	}
	if s := schedules[r.IntN(len(schedules))]; s != "" {
		extra = append(extra, fmt.Sprintf("backup: {schedule: %q, storageLocation: 's3://bkp/pg'}", s))
	}
	for _, more := range []string{specResources[r.IntN(len(specResources))], specParameters[r.IntN(len(specParameters))]} {
		if more != "" {
			extra = append(extra, more)
		}
	}
	c := convergenceCase{desired: pgSpec(t, n, pgVersions[r.IntN(len(pgVersions))], extra...)}
	if r.IntN(5) > 0 {
		m := 1 + r.IntN(5)
		c.observed = pgLive(m, pgVersions[r.IntN(len(pgVersions))], r.IntN(m))
		c.observed.Storage = storages[r.IntN(len(storages))]
		c.observed.StatefulSet.Resources = liveResources[r.IntN(len(liveResources))]
		// Some clusters were rendered before TLS (off), or stopped half
		// way, and some before their NetworkPolicy.
		if r.IntN(3) == 0 {
			c.observed.Network = ""
		}
		if r.IntN(4) == 0 {
			c.observed.StatefulSet.ReadOnlyRoot = false
		}
		if r.IntN(4) == 0 {
			c.observed.Runtime.ReadOnlyRoot = false
		}
		switch tls := contract.TLSModes[r.IntN(len(contract.TLSModes))]; tls {
		case contract.TLSOff, contract.TLSAccept:
			c.observed.TLS = strings.TrimPrefix(tls, contract.TLSOff)
			for i := range c.observed.Members {
				c.observed.Members[i].TLS = contract.TLSOn(tls)
			}
		}
		if params := liveParameters[r.IntN(len(liveParameters))]; params != nil {
			c.observed.Parameters, c.observed.ConfigRevision = params, contract.ConfigRevisionWithTLS(params, c.observed.TLS)
			for i := range c.observed.Members {
				c.observed.Members[i].ConfigRevision = c.observed.ConfigRevision
			}
		}
		c.observed.SynchronousStandbys = r.IntN(m)
		if r.IntN(2) == 0 {
			c.observed = pgBacked(c.observed)
		}
	}
	return c
}

// expectedRefusals computes, independently of the planner, which rules a
// case breaks.
func expectedRefusals(c convergenceCase) []string {
	var rules []string
	switch d := c.desired.(type) {
	case *spec.EtcdCluster:
		switch {
		case d.Spec.Size < 1 || d.Spec.Size > 7:
			rules = append(rules, RuleEtcdSizeRange)
		case d.Spec.Size%2 == 0:
			rules = append(rules, RuleEtcdSizeEven)
		}
		if o := c.observed; o != nil {
			if spec.Quantity(o.Storage).Cmp(d.Spec.Storage) > 0 {
				rules = append(rules, RuleStorageShrink)
			}
			have, _ := spec.ParseRelease(o.StatefulSet.Version, 3)
			want := d.Spec.Version.Parse()
			floor, hasFloor := spec.EtcdUpgradeFloor(want)
			downgrade := have.Minor >= downgradeFloorMinor && want.Minor == have.Minor-1 && (!hasFloor || want.Compare(floor.Floor) >= 0)
			switch {
			case want.Minor < have.Minor && !downgrade:
				rules = append(rules, RuleEtcdDowngrade)
			case want.Minor > have.Minor && d.Spec.Backup == nil && len(rules) == 0:
				rules = append(rules, RuleEtcdMinorNeedsBackup)
			}
		}
	case *spec.PostgresCluster:
		if d.Spec.Instances < 1 || d.Spec.Instances > 16 {
			rules = append(rules, RulePostgresInstancesRange)
		}
		if o := c.observed; o != nil {
			if spec.Quantity(o.Storage).Cmp(d.Spec.Storage) > 0 {
				rules = append(rules, RuleStorageShrink)
			}
			have, _ := spec.ParseRelease(o.StatefulSet.Version, 2)
			want := d.Spec.Version.Parse()
			switch {
			case want.Major < have.Major:
				rules = append(rules, RulePostgresMajorDowngrade)
			case want.Major > have.Major && d.Spec.Backup == nil:
				rules = append(rules, RulePostgresMajorNeedsBackup)
			}
		}
	}
	slices.Sort(rules)
	return rules
}

// converge plans and applies steps until the plan is empty, checking the
// invariants at every state, and returns how many steps it took.
func converge(t *testing.T, c convergenceCase) int {
	state := c.observed
	for n := 0; n < 200; n++ {
		p := kinds.PlanCluster(c.desired, state, nil)
		switch p.Status {
		case plan.StatusConverged:
			checkConverged(t, c.desired, state)
			return n
		case plan.StatusRefused:
			got := refusalRules(p)
			slices.Sort(got)
			if n > 0 || !slices.Equal(got, expectedRefusals(c)) {
				t.Fatalf("after %d steps refused %v, want %v", n, got, expectedRefusals(c))
			}
			return n
		case plan.StatusWaiting:
			t.Fatalf("after %d steps the plan waits on a settled state: %v", n, p.Waiting)
		}
		if n == 0 && len(expectedRefusals(c)) > 0 {
			t.Fatalf("planned %v but expected refusals %v", stepIDs(p), expectedRefusals(c))
		}
		s := p.Steps[0]
		checkPartial(t, c.desired, state, s)
		next := apply(t, state, c.desired, s)
		if err := checkInvariants(state, s, next); err != nil {
			t.Fatalf("step %d %s: %v", n, s.ID, err)
		}
		// The rest of the plan is what the next plan says: step IDs,
		// parameters and flags are stable as the cluster moves along.
		if again := kinds.PlanCluster(c.desired, next, nil); !slices.Equal(stepKeys(again.Steps), stepKeys(p.Steps[1:])) {
			t.Fatalf("after %s the plan changed:\n was  %v\n now  %v", s.ID, stepKeys(p.Steps[1:]), stepKeys(again.Steps))
		}
		state = next
	}
	t.Fatal("no convergence after 200 steps")
	return 0
}

// stepKeys sums up each step by what must not change on a re-plan.
func stepKeys(steps []plan.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		params, _ := json.Marshal(s.Params)
		out[i] = fmt.Sprintf("%s %s disruptive=%v reversible=%v %s", s.ID, s.Kind, s.Disruptive, s.Reversible, params)
	}
	return out
}

// checkPartial: right after a step was synced, the planner waits for it or
// plans the same step again; it never stacks another change on top.
func checkPartial(t *testing.T, desired spec.Cluster, state *live.Cluster, s plan.Step) {
	mid := applyPartial(state, s)
	if mid == nil {
		return
	}
	p := kinds.PlanCluster(desired, mid, nil)
	if p.Status != plan.StatusWaiting && (len(p.Steps) == 0 || p.Steps[0].ID != s.ID) {
		t.Fatalf("half-way through %s the plan is %s %v", s.ID, p.Status, stepIDs(p))
	}
}

func checkConverged(t *testing.T, desired spec.Cluster, c *live.Cluster) {
	t.Helper()
	want := desired.Common()
	size := 0
	switch d := desired.(type) {
	case *spec.EtcdCluster:
		size = d.Spec.Size
	case *spec.PostgresCluster:
		size = d.Spec.Instances
		if c.SynchronousStandbys != d.Spec.SynchronousStandbys {
			t.Errorf("converged with %d synchronous standbys, want %d", c.SynchronousStandbys, d.Spec.SynchronousStandbys)
		}
	}
	if len(c.Members) != size || c.StatefulSet.Replicas != size {
		t.Errorf("converged with %d members, want %d", len(c.Members), size)
	}
	for _, m := range c.Members {
		if m.Version != want.Version || !m.Ready {
			t.Errorf("converged with %+v, want version %s", m, want.Version)
		}
	}
	if spec.Quantity(c.Storage).Cmp(want.Storage) != 0 {
		t.Errorf("converged with storage %s, want %s", c.Storage, want.Storage)
	}
	if !equalBackup(observedBackup(c.Backup), backupSettings(want.Backup)) {
		t.Errorf("converged with backup %+v, want %+v", c.Backup, want.Backup)
	}
	// Nothing that runs differs from the spec: no change is left to ride
	// in a later step's pull request.
	if !spec.SameResources(c.StatefulSet.Resources, want.Resources.Contract()) {
		t.Errorf("converged with resources %+v, want %+v", c.StatefulSet.Resources, want.Resources.Contract())
	}
	if e, ok := desired.(*spec.EtcdCluster); ok {
		cp := e.Spec.CompactionPolicy()
		if c.Compaction == nil || c.Compaction.Mode != cp.Mode || c.Compaction.Retention != string(cp.Retention) {
			t.Errorf("converged with compaction %+v, want %+v", c.Compaction, cp)
		}
		if renderedQuota(c) != e.Spec.QuotaBytes() {
			t.Errorf("converged with space quota %q, want %d", c.SpaceQuota, e.Spec.QuotaBytes())
		}
	}
	if pg, ok := desired.(*spec.PostgresCluster); ok && !maps.Equal(c.Parameters, pg.Spec.RenderedParameters()) {
		t.Errorf("converged with parameters %v, want %v", c.Parameters, pg.Spec.RenderedParameters())
	}
	for _, m := range c.Members {
		if m.TemplateRevision != c.StatefulSet.TemplateRevision || m.ConfigRevision != c.ConfigRevision || len(m.PendingRestart) > 0 {
			t.Errorf("converged with %s at template %q config %q pending %v; the cluster's are %q and %q",
				m.Name, m.TemplateRevision, m.ConfigRevision, m.PendingRestart, c.StatefulSet.TemplateRevision, c.ConfigRevision)
		}
	}
}

func TestConvergence(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func(testing.TB, *rand.Rand) convergenceCase{"etcd": genEtcd, "postgres": genPostgres}
	for _, kind := range []string{"etcd", "postgres"} {
		steps := 0
		for i := range 400 {
			c := gens[kind](t, r)
			t.Run(fmt.Sprintf("%s/%d", kind, i), func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Log(c)
					}
				}()
				steps += converge(t, c)
			})
		}
		t.Logf("%s: 400 cases converged in %d steps", kind, steps)
	}
}

// TestFailoverIsNotFought: after the runtime fails over at any point of a
// plan, the planner goes on from the new primary and still converges.
func TestFailoverIsNotFought(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		c := genPostgres(t, r)
		if c.observed == nil || len(expectedRefusals(c)) > 0 || len(c.observed.Members) < 2 {
			continue
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			state := clone(c.observed)
			n := len(state.Members)
			next := (primaries(state)[0] + 1 + r.IntN(n-1)) % n
			for j := range state.Members {
				state.Members[j].Role = settledRole(spec.PostgresKind, j, next)
			}
			converge(t, convergenceCase{desired: c.desired, observed: state})
		})
	}
}
