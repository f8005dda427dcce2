package publish

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// longName is the longest valid cluster name.
var longName = strings.Repeat("a", spec.MaxNameLength-4) + "-db1"

func decodeSpec(t *testing.T, doc string) spec.Cluster {
	t.Helper()
	cs, err := spec.Decode("spec.yaml", []byte(doc))
	if err != nil || len(cs) != 1 {
		t.Fatalf("spec: %v", err)
	}
	return cs[0]
}

func etcdCluster(name string, n int, version string) *live.Cluster {
	c := &live.Cluster{Kind: spec.EtcdKind, Name: name, Storage: "8Gi", ClusterVersion: version[:strings.LastIndexByte(version, '.')], Network: contract.NetworkRestricted, TLS: contract.TLSRequire,
		Runtime: live.Runtime{ReadOnlyRoot: true}, StatefulSet: live.StatefulSet{Replicas: n, Version: version, ReadOnlyRoot: true},
		Compaction: &live.Compaction{Mode: spec.DefaultEtcdCompactionMode, Retention: spec.DefaultEtcdCompactionRetention, Applied: true}}
	for i := range n {
		role := live.RoleFollower
		if i == 0 {
			role = live.RoleLeader
		}
		c.Members = append(c.Members, live.Member{Name: fmt.Sprintf("%s-%d", name, i), Version: version, Ready: true, Role: role, TLS: true, PeerTLS: true})
	}
	return c
}

func pgCluster(name string, n int, version string, primary int) *live.Cluster {
	// Created by cairn: it requires TLS and has its NetworkPolicy.
	c := &live.Cluster{Kind: spec.PostgresKind, Name: name, Storage: "100Gi", TLS: contract.TLSRequire, Network: contract.NetworkRestricted,
		Runtime: live.Runtime{ReadOnlyRoot: true}, StatefulSet: live.StatefulSet{Replicas: n, Version: version, ReadOnlyRoot: true}}
	for i := range n {
		role := live.RoleReplica
		if i == primary {
			role = live.RolePrimary
		}
		c.Members = append(c.Members, live.Member{Name: fmt.Sprintf("%s-%d", name, i), Version: version, Ready: true, Role: role, TLS: true})
	}
	return c
}

func pgSpecDoc(name string, instances int, version string) string {
	return fmt.Sprintf("apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: %s}\nspec: {version: %q, instances: %d, storage: 100Gi}\n", name, version, instances)
}

func etcdSpecDoc(name string, size int, version string) string {
	return fmt.Sprintf("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: %s}\nspec: {size: %d, version: %q}\n", name, size, version)
}

// planOf plans one cluster as cairn does.
func planOf(t *testing.T, doc string, obs *live.Cluster) plan.Plan {
	t.Helper()
	pl := planner.New(planner.Etcd(), planner.Postgres()).PlanCluster(decodeSpec(t, doc), obs, nil)
	if pl.Status != plan.StatusPlanned {
		t.Fatalf("plan %s: %+v", pl.Status, pl)
	}
	return pl
}

// stepOf is the index of the first step of kind k.
func stepOf(t *testing.T, pl plan.Plan, k plan.Kind) int {
	t.Helper()
	for i, s := range pl.Steps {
		if s.Kind == k {
			return i
		}
	}
	t.Fatalf("no %s step in %d steps", k, len(pl.Steps))
	return 0
}

const (
	specSHA = "0123456789abcdef0123456789abcdef01234567"
	headSHA = "89abcdef0123456789abcdef0123456789abcdef"
	web     = "https://github.com/acme/gitops"
)

// hostilePlan is a plan whose every text a person or a policy wrote
// tries to break out of its place in the body.
func hostilePlan() plan.Plan {
	evil := "<script>alert(1)</script> **bold** [link](http://x) `code` | cell\n# heading & @team ~~gone~~ _em_ \\"
	return plan.Plan{
		Cluster: plan.ClusterRef{Kind: spec.PostgresKind, Name: "pg"}, ID: "0123456789ab", ObservedFingerprint: "sha256:abcdef0123456789",
		Status: plan.StatusPlanned,
		Steps: []plan.Step{{ID: "restart-1", Kind: plan.RestartMember, Summary: "Restart " + evil, Disruptive: true, Reversible: true, Rollback: evil,
			Params:    plan.Params{RestartMember: &plan.RestartMemberParams{Member: "pg-1" + evil, Ordinal: 1, Partition: 1, Replicas: 3}},
			Gates:     []plan.Gate{{Kind: plan.GateClusterHealthy, When: plan.Before, Description: evil}, {Kind: plan.GateMemberRestarted, When: plan.After, Description: "restarted " + evil}},
			Decisions: []plan.Decision{{Policy: "window`x", Verdict: plan.Hold, Reason: evil}}}},
	}
}

func TestBodyGolden(t *testing.T) {
	etcd3 := etcdCluster("e", 3, "3.5.21")
	pg3 := pgCluster("my-production-db", 3, "14.5", 0)
	pgBig := pgCluster(longName, 16, "14.5", 0)
	etcdOld := etcdCluster(longName, 7, "3.2.13")
	tests := []struct {
		name string
		in   func(t *testing.T) BodyInput
	}{
		{"etcd-scale-out", func(t *testing.T) BodyInput {
			return BodyInput{Plan: planOf(t, etcdSpecDoc("e", 5, "3.5.21"), etcd3), SpecCommit: specSHA, Head: headSHA, Live: etcd3, WebURL: web,
				Previous: &PullRequest{Number: 7, Branch: Branch("e", "seal-bootstrap"), State: Merged}, Diff: "+  replicas: 4\n"}
		}},
		{"etcd-add-second-voter", func(t *testing.T) BodyInput {
			// etcd before 3.4 has no learners: the second member joins as a
			// voter, and writes stop until it has started (issue 41).
			e1 := etcdCluster("e", 1, "3.2.13")
			pl := planOf(t, etcdSpecDoc("e", 3, "3.2.13"), e1)
			return BodyInput{Plan: pl, Current: stepOf(t, pl, plan.EtcdAddMember), SpecCommit: specSHA, Head: headSHA, Live: e1, WebURL: web}
		}},
		{"etcd-scale-out-local", func(t *testing.T) BodyInput {
			// The local provider: no web address, pull requests by branch.
			return BodyInput{Plan: planOf(t, etcdSpecDoc("e", 5, "3.5.21"), etcd3), SpecCommit: specSHA, Head: headSHA, Live: etcd3,
				Previous: &PullRequest{Branch: Branch("e", "seal-bootstrap"), State: Merged}}
		}},
		{"pg-create-restore-foreign-bucket", func(t *testing.T) BodyInput {
			// The spec opts in to a bucket that is not the cluster's own:
			// the reviewer is told, above everything else.
			doc := "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: copy}\nspec:\n  version: \"15.4\"\n  instances: 2\n  storage: 100Gi\n" +
				"  backup: {schedule: \"0 2 * * *\", storageLocation: \"s3://ours/pg\"}\n" +
				"  restoreFrom: {storageLocation: \"s3://theirs/pg\", cluster: orders, trustForeignBucket: true}\n"
			return BodyInput{Plan: planOf(t, doc, nil), SpecCommit: specSHA, Head: headSHA, WebURL: web, Diff: "+kind: StatefulSet\n"}
		}},
		{"pg-minor-upgrade-replica", func(t *testing.T) BodyInput {
			return BodyInput{Plan: planOf(t, pgSpecDoc("my-production-db", 3, "14.9"), pg3), SpecCommit: specSHA, Head: headSHA, Live: pg3, WebURL: web}
		}},
		{"pg-minor-upgrade-switchover", func(t *testing.T) BodyInput {
			pl := planOf(t, pgSpecDoc("my-production-db", 3, "14.9"), pg3)
			return BodyInput{Plan: pl, Current: stepOf(t, pl, plan.PostgresSwitchover), SpecCommit: specSHA, Head: headSHA, Live: pg3, WebURL: web}
		}},
		{"pg-requested-switchover", func(t *testing.T) BodyInput {
			// A person's spec.switchover (cairn switchover): one step that
			// says which member becomes the primary and what is lost.
			doc := pgSpecDoc("my-production-db", 3, "14.5") + "  switchover: {to: my-production-db-2, id: before-node-maintenance}\n"
			doc = strings.Replace(doc, "spec: {version: \"14.5\", instances: 3, storage: 100Gi}", "spec:\n  version: \"14.5\"\n  instances: 3\n  storage: 100Gi", 1)
			pl := planOf(t, doc, pg3)
			return BodyInput{Plan: pl, Current: 0, SpecCommit: specSHA, Head: headSHA, Live: pg3, WebURL: web}
		}},
		{"pg-largest-plan-longest-name", func(t *testing.T) BodyInput {
			pl := planOf(t, pgSpecDoc(longName, 16, "14.9"), pgBig)
			return BodyInput{Plan: pl, Current: len(pl.Steps) - 1, SpecCommit: specSHA, Head: headSHA, Live: pgBig, WebURL: web,
				Previous: &PullRequest{Number: 99999, Branch: Branch(longName, pl.Steps[len(pl.Steps)-2].ID), State: Merged}}
		}},
		{"pg-tls-require", func(t *testing.T) BodyInput {
			// A cluster rendered before TLS, half way: the step that
			// refuses plain connections says so.
			pgAccept := pgCluster("my-production-db", 3, "14.5", 0)
			pgAccept.TLS = contract.TLSAccept
			pl := planOf(t, pgSpecDoc("my-production-db", 3, "14.5"), pgAccept)
			return BodyInput{Plan: pl, Current: stepOf(t, pl, plan.PostgresConfigureTLS), SpecCommit: specSHA, Head: headSHA, Live: pgAccept, WebURL: web}
		}},
		{"etcd-tls-require", func(t *testing.T) BodyInput {
			// An etcd cluster rendered before TLS, every member serving it
			// beside plain HTTP: the first restart that requires it says
			// who is cut off and that reverting it is no way back.
			kvAccept := etcdCluster("kv", 3, "3.5.21")
			kvAccept.TLS = contract.TLSAccept
			for i := range kvAccept.Members {
				kvAccept.Members[i].PeerTLS = false
			}
			pl := planOf(t, etcdSpecDoc("kv", 3, "3.5.21"), kvAccept)
			return BodyInput{Plan: pl, Current: 0, SpecCommit: specSHA, Head: headSHA, Live: kvAccept, WebURL: web}
		}},
		{"pg-network-restrict", func(t *testing.T) BodyInput {
			// A cluster rendered before its NetworkPolicy: the step that
			// cuts off unlabelled clients says who needs which label.
			pgOpen := pgCluster("my-production-db", 3, "14.5", 0)
			pgOpen.Network = ""
			pl := planOf(t, pgSpecDoc("my-production-db", 3, "14.5"), pgOpen)
			return BodyInput{Plan: pl, Current: stepOf(t, pl, plan.RestrictNetwork), SpecCommit: specSHA, Head: headSHA, Live: pgOpen, WebURL: web}
		}},
		{"pg-runtime-read-only-root", func(t *testing.T) BodyInput {
			// A runtime rendered before its read-only root: the step says
			// no member restarts and what the runtime's rollout pauses.
			pgOld := pgCluster("my-production-db", 3, "14.5", 0)
			pgOld.Runtime.ReadOnlyRoot = false
			pl := planOf(t, pgSpecDoc("my-production-db", 3, "14.5"), pgOld)
			return BodyInput{Plan: pl, Current: stepOf(t, pl, plan.HardenRuntime), SpecCommit: specSHA, Head: headSHA, Live: pgOld, WebURL: web}
		}},
		{"pg-major-upgrade", func(t *testing.T) BodyInput {
			pg13 := pgCluster("my-production-db", 3, "13.14", 0)
			pg13.Backup = &live.Backup{Schedule: "0 2 * * *", StorageLocation: "s3://backups/pg", LastSuccessful: "2026-01-01T02:00:00Z"}
			// and the WAL archiving the policy renders, read back.
			pg13.Parameters = map[string]string{}
			for k, v := range contract.PostgresArchiveSettings {
				pg13.Parameters[k] = spec.ParamValue(v).Quoted()
			}
			doc := strings.Replace(pgSpecDoc("my-production-db", 3, "14.9"), "storage: 100Gi}", "storage: 100Gi, backup: {schedule: '0 2 * * *', storageLocation: 's3://backups/pg'}}", 1)
			pl := planOf(t, doc, pg13)
			return BodyInput{Plan: pl, Current: stepOf(t, pl, plan.PostgresMajorUpgrade), SpecCommit: specSHA, Head: headSHA, Live: pg13, WebURL: web}
		}},
		// Its pre-flight check: nothing of the members is touched.
		{"pg-upgrade-check", func(t *testing.T) BodyInput {
			pg13 := pgCluster("my-production-db", 3, "13.14", 0)
			pg13.Backup = &live.Backup{Schedule: "0 2 * * *", StorageLocation: "s3://backups/pg", LastSuccessful: "2026-01-01T02:00:00Z"}
			pg13.Parameters = map[string]string{}
			for k, v := range contract.PostgresArchiveSettings {
				pg13.Parameters[k] = spec.ParamValue(v).Quoted()
			}
			doc := strings.Replace(pgSpecDoc("my-production-db", 3, "14.9"), "storage: 100Gi}", "storage: 100Gi, backup: {schedule: '0 2 * * *', storageLocation: 's3://backups/pg'}}", 1)
			pl := planOf(t, doc, pg13)
			return BodyInput{Plan: pl, Current: stepOf(t, pl, plan.PostgresUpgradeCheck), SpecCommit: specSHA, Head: headSHA, Live: pg13, WebURL: web}
		}},
		{"etcd-largest-plan-longest-name", func(t *testing.T) BodyInput {
			etcdOld.Backup = &live.Backup{Schedule: "0 2 * * *", StorageLocation: "s3://backups/etcd", LastSuccessful: "2026-01-01T02:00:00Z"}
			doc := strings.Replace(etcdSpecDoc(longName, 7, "3.6.4"), `"3.6.4"}`, `"3.6.4", backup: {schedule: '0 2 * * *', storageLocation: 's3://backups/etcd'}}`, 1)
			pl := planOf(t, doc, etcdOld)
			return BodyInput{Plan: pl, SpecCommit: specSHA, Head: headSHA, Live: etcdOld, WebURL: web}
		}},
		{"etcd-recover-from-snapshot", func(t *testing.T) BodyInput {
			lost := etcdCluster("e", 3, "3.5.21")
			for i := range lost.Members {
				lost.Members[i].Role, lost.Members[i].Ready = live.RoleUnknown, false
			}
			lost.Members[0].Revision = 880
			lost.QuorumLost = &live.QuorumLoss{Since: "2026-01-01T03:00:00Z", Long: true, Revision: 1200}
			lost.Backup = &live.Backup{Schedule: "0 2 * * *", StorageLocation: "s3://backups/etcd", LastSuccessful: "2026-01-01T02:00:09Z",
				LastID: "20260101T020000Z-5c1e2a", LastLocation: "s3://backups/etcd", LastRevision: 1100}
			doc := strings.Replace(etcdSpecDoc("e", 3, "3.5.21"), `"3.5.21"}`, `"3.5.21", backup: {schedule: '0 2 * * *', storageLocation: 's3://backups/etcd'}}`, 1)
			return BodyInput{Plan: planOf(t, doc, lost), SpecCommit: specSHA, Head: headSHA, Live: lost, WebURL: web}
		}},
		{"live-not-planned-against", func(t *testing.T) BodyInput {
			// A live state other than the plan's is neither shown nor
			// used for roles.
			other := etcdCluster("e", 3, "3.5.21")
			other.Members[2].Ready = false
			return BodyInput{Plan: planOf(t, etcdSpecDoc("e", 5, "3.5.21"), etcd3), SpecCommit: specSHA, Live: other}
		}},
		{"hostile-text", func(t *testing.T) BodyInput {
			return BodyInput{Plan: hostilePlan(), SpecCommit: "not a hash <b>", Head: "x", WebURL: web,
				Gates: []GateState{{Gate: hostilePlan().Steps[0].Gates[0], Why: "<img src=x> | *no*"}}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			in.Wording = kindWording[in.Plan.Cluster.Kind]
			got := Body(in)
			if n := utf8.RuneCountInString(got); n > MaxBody-bodyReserve {
				t.Errorf("a body of %d characters", n)
			}
			if Body(in) != got {
				t.Error("the body is not byte-stable")
			}
			golden(t, filepath.Join("testdata", "body", tc.name+".md"), got)
		})
	}
}

// kindWording is the two kinds' wording, as cmd/cairn's table gives it.
var kindWording = map[string]Wording{spec.EtcdKind: EtcdWording(), spec.PostgresKind: PostgresWording()}

// golden compares got with the file at path; -update rewrites it.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./publish/ -run %s -update)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test ./publish/ -run %s -update to accept):\n%s", path, t.Name(), firstDiff(string(want), got))
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, wl, gl)
		}
	}
	return ""
}
