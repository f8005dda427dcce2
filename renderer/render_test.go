package renderer

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

var update = flag.Bool("update", false, "rewrite the golden trees under testdata/")

type renderCase struct {
	name string
	spec string // YAML of one cluster
	live string // YAML of the observed cluster (one list item), or ""
	step string // step to select; "" selects the base
}

const etcdSpecYAML = `apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: e, namespace: db, labels: {team: storage}}
spec:
  size: %SIZE%
  version: "%VERSION%"
  storage: %STORAGE%
  resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {memory: 2Gi}}
%EXTRA%`

const pgSpecYAML = `apiVersion: db.example.com/v1alpha1
kind: PostgresCluster
metadata: {name: pg}
spec:
  version: "%VERSION%"
  instances: %SIZE%
  storage: %STORAGE%
  postgresql: {parameters: {max_connections: 200, shared_buffers: 256MB}}
  backup: {schedule: "0 2 * * *", storageLocation: "s3://bkp/pg", retention: {count: 7}}
%EXTRA%`

func fill(tmpl string, kv ...string) string {
	r := strings.NewReplacer(kv...)
	return r.Replace(tmpl)
}

func etcdLiveYAML(n int, version string, leader int) string {
	var b strings.Builder
	b.WriteString("kind: EtcdCluster\nname: e\nstorage: 8Gi\n" + liveNetwork + liveRuntime + etcdLiveTLS + etcdLiveCompaction + "\nstatefulSet: {readOnlyRootFilesystem: true, replicas: " + itoa(n) + ", updatePartition: 0, version: \"" + version + "\", " + etcdLiveResources + "}\nmembers:\n")
	for i := range n {
		role := "follower"
		if i == leader {
			role = "leader"
		}
		b.WriteString("- {name: e-" + itoa(i) + ", version: \"" + version + "\", ready: true, role: " + role + etcdLiveMemberTLS + "}\n")
	}
	return b.String()
}

// etcdLiveTLS and etcdLiveMemberTLS: the live clusters were created by
// cairn, with TLS required of clients and peers; the etcd-tls-* cases
// start from clusters rendered before TLS.
const (
	etcdLiveTLS       = "tls: require\n"
	etcdLiveMemberTLS = ", tls: true, peerTLS: true"
)

// etcdLiveCompaction is the default compaction policy as the rendered
// config of a cluster created with it sets it.
const etcdLiveCompaction = "compaction: {mode: periodic, retention: 1h, applied: true}"

// etcdLiveResources are etcdSpecYAML's resources as the API server
// writes them back.
const etcdLiveResources = "resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {memory: 2Gi}}"

// pgLiveParameters are pgSpecYAML's parameters as the rendered
// postgresql.conf holds them.
// pgLiveTLS: the live clusters were created by cairn, with TLS required;
// the pg-tls-* cases start from clusters rendered before TLS.
const pgLiveTLS = "tls: require\n"

// etcdIssuerSpec names a cert-manager Issuer of the cluster's namespace
// (kind and group defaulted); etcdLiveIssuer is a cluster created with
// it, as its rendered config says.
const (
	etcdIssuerSpec = "  tls: {issuerRef: {name: etcd-ca}}"
	etcdLiveIssuer = "tlsIssuer: {name: etcd-ca, kind: Issuer, group: cert-manager.io}\n"
)

// liveNetwork: a cluster cairn created has its NetworkPolicy rendered.
const liveNetwork = "network: restricted\n"

// liveRuntime: a cluster cairn created runs its runtime with a read-only
// root filesystem.
const liveRuntime = "runtime: {readOnlyRootFilesystem: true}\n"

// pgLiveParameters are the spec's parameters and the archive settings
// its backup policy brings, as the observer reads them back.
const pgLiveParameters = `parameters: {max_connections: "'200'", shared_buffers: "'256MB'", archive_mode: "'on'", archive_timeout: "'60s'", archive_command: "'/cairn-bin/cairn instance wal --socket /var/run/postgresql/.s.cairn-wal push %f %p'"}`

func pgLiveYAML(n int, version string, primary int, extra string) string {
	var b strings.Builder
	b.WriteString("kind: PostgresCluster\nname: pg\nstorage: 10Gi\n" + liveNetwork + liveRuntime + pgLiveTLS + pgLiveParameters + "\nstatefulSet: {readOnlyRootFilesystem: true, replicas: " + itoa(n) + ", updatePartition: 0, version: \"" + version + "\"}\n")
	b.WriteString("backup: {schedule: \"0 2 * * *\", timeZone: UTC, storageLocation: \"s3://bkp/pg\", retentionCount: 7}\n" + extra + "members:\n")
	for i := range n {
		role := "replica"
		if i == primary {
			role = "primary"
		}
		b.WriteString("- {name: pg-" + itoa(i) + ", version: \"" + version + "\", ready: true, role: " + role + ", tls: true}\n")
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

var renderCases = []renderCase{
	{"etcd-create", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""), "", "create"},
	// Certificates from a cert-manager issuer instead of the runtime's CA:
	// at create, and in the base and steps of a cluster created with it.
	{"etcd-create-cert-manager", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", etcdIssuerSpec), "", "create"},
	{"etcd-cert-manager-configure-backup", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", etcdIssuerSpec+"\n  backup: {schedule: '@daily', timeZone: UTC, storageLocation: 'file:///backups/e'}"),
		strings.Replace(etcdLiveYAML(3, "3.5.21", 0), liveNetwork, liveNetwork+etcdLiveIssuer, 1), "configure-backup"},
	{"etcd-add-learner", fill(etcdSpecYAML, "%SIZE%", "5", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""), etcdLiveYAML(3, "3.5.21", 0), "etcd-add-3"},
	{"etcd-add-voter-3.2", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.2.13", "%STORAGE%", "8Gi", "%EXTRA%", ""), etcdLiveYAML(1, "3.2.13", 0), "etcd-add-1"},
	{"etcd-remove-member", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""), etcdLiveYAML(5, "3.5.21", 4), "etcd-remove-4"},
	{"etcd-scale-in", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""), etcdLiveYAML(5, "3.5.21", 4), "scale-in-4"},
	// A minor hop relies on a snapshot: spec.backup, and a TakeBackup step first.
	{"etcd-upgrade", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.4.37", "%STORAGE%", "8Gi", "%EXTRA%", "  backup: {schedule: '@daily', storageLocation: 'file:///backups/e'}"),
		strings.Replace(etcdLiveYAML(3, "3.3.27", 0), "storage: 8Gi\n", "storage: 8Gi\nbackup: {schedule: '@daily', timeZone: UTC, storageLocation: 'file:///backups/e'}\n", 1), "upgrade-1-to-3.4.37"},
	// A space quota raise rides the upgrade's restarts.
	{"etcd-upgrade-with-restart", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.26", "%STORAGE%", "8Gi", "%EXTRA%", "  spaceQuota: 4Gi"),
		etcdLiveYAML(3, "3.5.21", 0), "upgrade-2-to-3.5.26"},
	{"etcd-expand-storage", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "16Gi", "%EXTRA%", ""), etcdLiveYAML(3, "3.5.21", 0), "expand-storage-16gi"},
	{"etcd-configure-backup", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", "  backup: {schedule: '@daily', timeZone: Europe/Berlin, storageLocation: 'file:///backups/e'}"), etcdLiveYAML(3, "3.5.21", 0), "configure-backup"},
	{"etcd-scale-in-grown-volumes", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "16Gi", "%EXTRA%", ""),
		strings.Replace(strings.Replace(etcdLiveYAML(5, "3.5.21", 0), "storage: 8Gi", "storage: 16Gi", 1), "updatePartition: 0,", "updatePartition: 0, volumeClaimStorage: 8Gi,", 1), "scale-in-4"},
	// A cluster rendered before TLS moves to it in two rolling restarts.
	{"etcd-tls-accept", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""),
		strings.Replace(strings.ReplaceAll(etcdLiveYAML(3, "3.5.21", 0), etcdLiveMemberTLS, ""), etcdLiveTLS, "", 1), "restart-2-0b5a5ca12c04"},
	// ... and takes a cert-manager issuer with its first restart.
	{"etcd-tls-accept-cert-manager", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", etcdIssuerSpec),
		strings.Replace(strings.ReplaceAll(etcdLiveYAML(3, "3.5.21", 0), etcdLiveMemberTLS, ""), etcdLiveTLS, "", 1), "restart-2-0b5a5ca12c04"},
	{"etcd-tls-require", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""),
		strings.Replace(strings.ReplaceAll(etcdLiveYAML(3, "3.5.21", 0), etcdLiveMemberTLS, ", tls: true"), etcdLiveTLS, "tls: accept\n", 1), "restart-2-501a06f93976"},
	{"etcd-converged", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""), etcdLiveYAML(3, "3.5.21", 0), ""},
	{"pg-create", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""), "", "create"},
	// A cluster rendered before TLS moves to it in two reloads.
	{"pg-tls-accept", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		strings.Replace(strings.ReplaceAll(pgLiveYAML(3, "14.5", 0, ""), ", tls: true", ""), pgLiveTLS, "", 1), "tls-accept"},
	{"pg-tls-require", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		strings.Replace(pgLiveYAML(3, "14.5", 0, ""), pgLiveTLS, "tls: accept\n", 1), "tls-require"},
	// Certificates from a cert-manager issuer instead of the runtime's CA.
	{"pg-create-cert-manager", strings.Replace(fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", "  tls: {issuerRef: {name: company-ca, kind: ClusterIssuer}}"),
		"metadata: {name: pg}", "metadata: {name: pg, namespace: db}", 1), "", "create"},
	{"pg-add-replica", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(2, "14.5", 0, ""), "pg-add-2"},
	{"pg-scale-in", fill(pgSpecYAML, "%SIZE%", "2", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 0, ""), "scale-in-2"},
	{"pg-upgrade-replica", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.9", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 0, ""), "upgrade-2-to-14.9"},
	{"pg-switchover", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.9", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 0, ""), "switchover-0-to-1-for-14.9"},
	// A person's spec.switchover: its step records the request served,
	// and a later step keeps the record in its base.
	{"pg-switchover-requested", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", "  switchover: {to: pg-2, id: maint-1}"), pgLiveYAML(3, "14.5", 0, ""), "switchover-to-2-maint-1"},
	{"pg-switchover-served", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", "  switchover: {to: pg-2, id: maint-1}"),
		strings.Replace(pgLiveYAML(3, "14.5", 1, "switchoverServed: maint-1\n"), "0 2 * * *", "0 4 * * *", 1), "configure-backup"},
	{"pg-take-backup", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "15.4", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 0, ""), "backup-before-15.4"},
	{"pg-major-upgrade", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "15.4", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 0, ""), "pg-major-upgrade-15.4"},
	// The pre-flight check's Job, and a baseline that holds it: every
	// step renders it as it runs until the upgrade's step removes it.
	{"pg-upgrade-check", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "15.4", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 0, ""), "pg-upgrade-check-15.4"},
	{"pg-upgrade-check-remove", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		pgLiveYAML(3, "14.5", 0, "upgradeCheck: {from: 14, to: 15, storageLocation: \"s3://bkp/pg\", scratch: 10Gi, result: failed, reason: refused}\n"), "pg-upgrade-check-remove-14-15"},
	{"pg-major-upgrade-checked", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "15.4", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		pgLiveYAML(3, "14.5", 0, "upgradeCheck: {from: 14, to: 15, storageLocation: \"s3://bkp/pg\", scratch: 10Gi, result: passed}\n"), "pg-major-upgrade-15.4"},
	{"pg-sync-standbys", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", "  synchronousStandbys: 1"), pgLiveYAML(3, "14.5", 0, ""), "sync-standbys-1"},
	{"pg-expand-storage", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "20Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 0, ""), "expand-storage-20gi"},
	{"pg-configure-backup", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""), strings.Replace(pgLiveYAML(3, "14.5", 0, ""), "0 2 * * *", "0 4 * * *", 1), "configure-backup"},
	{"etcd-restart-resources", strings.Replace(fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""), "{requests: {cpu: 500m, memory: 1Gi}, limits: {memory: 2Gi}}", "{requests: {cpu: '1', memory: 2Gi}, limits: {memory: 4Gi}}", 1),
		etcdLiveYAML(3, "3.5.21", 0), "restart-2-49179632284c"},
	// A cluster rendered before compaction was planned gets the default
	// policy as a step of its own; a space quota is a rolling restart.
	{"etcd-configure-compaction", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""),
		strings.Replace(etcdLiveYAML(3, "3.5.21", 0), etcdLiveCompaction+"\n", "", 1), "configure-compaction"},
	{"etcd-restart-space-quota", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", "  spaceQuota: 4Gi"),
		etcdLiveYAML(3, "3.5.21", 0), "restart-2-7b679b0179ed"},
	// A downgrade from 3.6 on: the step that asks the runtime to enable it.
	{"etcd-downgrade-enable", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.6.16", "%STORAGE%", "8Gi", "%EXTRA%", ""),
		strings.Replace(etcdLiveYAML(3, "3.7.3", 0), "members:\n", "clusterVersion: \"3.7\"\nmembers:\n", 1), "etcd-downgrade-to-3.6"},
	// A minor upgrade and a restart-causing change share one rolling
	// pass: the upgrade's first step changes the template's version and
	// the rest of it.
	{"pg-upgrade-with-restart", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.9", "%STORAGE%", "10Gi", "%EXTRA%", "  resources: {requests: {cpu: '2', memory: 4Gi}}"), pgLiveYAML(3, "14.5", 0, ""), "upgrade-2-to-14.9"},
	{"pg-restart-resources", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", "  resources: {requests: {cpu: '2', memory: 4Gi}}"), pgLiveYAML(3, "14.5", 0, ""), "restart-2-b9d2816176d1"},
	{"pg-reload-parameters", strings.Replace(fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""), "shared_buffers: 256MB}", "shared_buffers: 256MB, work_mem: 16MB}", 1), pgLiveYAML(3, "14.5", 0, ""), "reload-parameters-86ffa6c6d594"},
	// A cluster rendered before its NetworkPolicy gets it by a step.
	{"etcd-network-restrict", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""),
		strings.Replace(etcdLiveYAML(3, "3.5.21", 0), liveNetwork, "", 1), "network-restrict"},
	{"pg-network-restrict", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		strings.Replace(pgLiveYAML(3, "14.5", 0, ""), liveNetwork, "", 1), "network-restrict"},
	// A template rendered before read-only roots gets them by a rolling
	// restart.
	{"etcd-restart-read-only-root", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""),
		strings.Replace(etcdLiveYAML(3, "3.5.21", 0), "readOnlyRootFilesystem: true, ", "", 1), "restart-2-7a8d730fd511"},
	{"pg-restart-read-only-root", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		strings.Replace(pgLiveYAML(3, "14.5", 0, ""), "readOnlyRootFilesystem: true, ", "", 1), "restart-2-518fa22c578c"},
	// A runtime rendered before its read-only root gets it by a step.
	// A runtime rendered before cairn hardened it: a writable root and no
	// memory limit, both brought by one step.
	{"etcd-runtime-read-only-root", fill(etcdSpecYAML, "%SIZE%", "3", "%VERSION%", "3.5.21", "%STORAGE%", "8Gi", "%EXTRA%", ""),
		strings.Replace(etcdLiveYAML(3, "3.5.21", 0), liveRuntime, "runtime: {noMemoryLimit: true}\n", 1), "runtime-read-only-root"},
	{"pg-runtime-read-only-root", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		strings.Replace(pgLiveYAML(3, "14.5", 0, ""), liveRuntime, "runtime: {noMemoryLimit: true}\n", 1), "runtime-read-only-root"},
	// One hardened before cairn set memory bounds: a step of its own.
	{"pg-runtime-memory-limit", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""),
		strings.Replace(pgLiveYAML(3, "14.5", 0, ""), liveRuntime, "runtime: {readOnlyRootFilesystem: true, noMemoryLimit: true}\n", 1), "runtime-memory-limit"},
	{"pg-converged", fill(pgSpecYAML, "%SIZE%", "3", "%VERSION%", "14.5", "%STORAGE%", "10Gi", "%EXTRA%", ""), pgLiveYAML(3, "14.5", 2, ""), ""},
}

func loadCase(t *testing.T, rc renderCase) (spec.Cluster, plan.Plan) {
	t.Helper()
	cs, err := spec.Decode(rc.name+".yaml", []byte(rc.spec))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	var obs *live.Cluster
	if rc.live != "" {
		doc := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- " + strings.ReplaceAll(strings.TrimSpace(rc.live), "\n", "\n  ") + "\n"
		s, err := live.Decode(rc.name+"-live.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("live: %v", err)
		}
		obs = &s.Clusters[0]
	}
	return cs[0], planner.New(planner.Etcd(), planner.Postgres()).PlanCluster(cs[0], obs, nil)
}

func TestGoldenTrees(t *testing.T) {
	r, err := New(Options{}, Etcd(), Postgres())
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range renderCases {
		t.Run(rc.name, func(t *testing.T) {
			c, p := loadCase(t, rc)
			tree, _, err := r.Render(c, p, rc.step)
			if err != nil {
				t.Fatal(err)
			}
			checkGoldenTree(t, tree, filepath.Join("testdata", rc.name), c.Ref().Name)
		})
	}
}

// checkGoldenTree compares tree, rendered for cluster, with the golden
// tree in dir (written there first with -update), and builds every
// folder of the committed golden tree on its own.
func checkGoldenTree(t *testing.T, tree Tree, dir, cluster string) {
	t.Helper()
	if *update {
		if _, err := tree.Write(dir, Root(cluster)); err != nil {
			t.Fatal(err)
		}
	}
	golden := readTree(t, dir)
	if diff := compareTrees(golden, tree); diff != "" {
		t.Fatalf("tree differs from %s (go test ./renderer -update):\n%s", dir, diff)
	}
	for _, d := range kustomizeDirs(golden) {
		if _, err := Build(golden, d); err != nil {
			t.Errorf("golden %s: %v", d, err)
		}
	}
}

func readTree(t *testing.T, dir string) Tree {
	t.Helper()
	tree := Tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		tree[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatalf("read golden %s: %v (go test ./renderer -update)", dir, err)
	}
	return tree
}

func compareTrees(a, b Tree) string {
	var out []string
	for _, p := range append(a.Paths(), b.Paths()...) {
		if !bytes.Equal(a[p], b[p]) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n")
}

func kustomizeDirs(t Tree) []string {
	var dirs []string
	for _, p := range t.Paths() {
		if path.Base(p) == "kustomization.yaml" {
			dirs = append(dirs, path.Dir(p))
		}
	}
	return dirs
}

func TestRenderIsByteStable(t *testing.T) {
	r, _ := New(Options{}, Etcd(), Postgres())
	for _, rc := range renderCases {
		c, p := loadCase(t, rc)
		a, _, err := r.Render(c, p, rc.step)
		if err != nil {
			t.Fatal(err)
		}
		b, _, _ := r.Render(c, p, rc.step)
		if d := compareTrees(a, b); d != "" {
			t.Errorf("%s: two renders differ in %s", rc.name, d)
		}
	}
}

// allowedChanges are the fields each step kind's overlay may touch: a
// step's overlay holds what that step changes and nothing else.
var allowedChanges = map[plan.Kind][]string{
	// The disruption budgets follow the members (disruption.go): a
	// second member brings them, a last one takes the primary's away.
	plan.EtcdAddMember:    {"statefulset.patch.yaml /spec/replicas", "pdb.patch.yaml /spec/minAvailable", "pdb.yaml", "pdb-leader.yaml", "pvc-"},
	plan.ScaleIn:          {"statefulset.patch.yaml /spec/replicas", "pdb.patch.yaml /spec/minAvailable", "pdb.delete.yaml", "pdb-primary.delete.yaml", "pvc-"},
	plan.EtcdRemoveMember: {"cairn-config.patch.yaml /data/request.remove-member.id", "cairn-config.patch.yaml /data/request.remove-member.member"},
	plan.UpgradeMember:    {"statefulset.patch.yaml /spec/template/spec/containers/0/image", "statefulset.patch.yaml /spec/updateStrategy/rollingUpdate/partition"},
	plan.PostgresAddReplica: {"statefulset.patch.yaml /spec/replicas", "pvc-", "pdb.patch.yaml /spec/minAvailable", "pdb-primary.yaml",
		"statefulset.patch.yaml /spec/template/spec/containers/0/image", "statefulset.patch.yaml /spec/updateStrategy/rollingUpdate/partition"},
	plan.PostgresSwitchover: {"cairn-config.patch.yaml /data/request.switchover.id", "cairn-config.patch.yaml /data/request.switchover.to",
		"cairn-config.patch.yaml /data/switchover.served"},
	plan.TakeBackup:                  {"cairn-config.patch.yaml /data/request.backup.id"},
	plan.PostgresSynchronousStandbys: {"cairn-config.patch.yaml /data/synchronous-standbys"},
	plan.ConfigureBackup:             {"cairn-config.patch.yaml /data/backup."},
	plan.EtcdConfigureCompaction:     {"cairn-config.patch.yaml /data/etcd.compaction."},
	plan.EtcdDowngrade:               {"cairn-config.patch.yaml /data/request.etcd-downgrade."},
	plan.ExpandStorage:               {"pvc-"},
	plan.SealBootstrap:               {"cairn-config.patch.yaml /data/bootstrap"},
	plan.RestartMember: {"statefulset.patch.yaml /spec/template/metadata/annotations", "statefulset.patch.yaml /spec/template/spec/containers/0/resources",
		"statefulset.patch.yaml /spec/updateStrategy/rollingUpdate/partition", "postgres-config.patch.yaml /data/postgresql.conf", "cairn-config.patch.yaml /data/postgres.config-revision",
		"cairn-config.patch.yaml /data/etcd.quota-backend-bytes",
		// Read-only roots, with their writable folders as volumes.
		"statefulset.patch.yaml /spec/template/spec/volumes/", "statefulset.patch.yaml /spec/template/spec/containers/0/volumeMounts/",
		"statefulset.patch.yaml /spec/template/spec/containers/0/securityContext/readOnlyRootFilesystem",
		"statefulset.patch.yaml /spec/template/spec/initContainers/0/volumeMounts/", "statefulset.patch.yaml /spec/template/spec/initContainers/0/securityContext/readOnlyRootFilesystem",
		"statefulset.patch.yaml /spec/template/spec/initContainers/1/volumeMounts/", "statefulset.patch.yaml /spec/template/spec/initContainers/1/securityContext/readOnlyRootFilesystem"},
	plan.PostgresReloadParameters: {"postgres-config.patch.yaml /data/postgresql.conf", "cairn-config.patch.yaml /data/postgres.config-revision"},
	plan.PostgresConfigureTLS: {"postgres-config.patch.yaml /data/postgresql.conf", "postgres-config.patch.yaml /data/pg_hba.conf",
		"cairn-config.patch.yaml /data/postgres.config-revision", "cairn-config.patch.yaml /data/tls",
		"member-role.patch.yaml /rules", "runtime-role.patch.yaml /rules"},
	plan.RestrictNetwork: {"networkpolicy.yaml", "cairn-config.patch.yaml /data/network"},
	plan.HardenRuntime: {"runtime-deployment.patch.yaml /spec/template/spec/volumes", "runtime-deployment.patch.yaml /spec/template/spec/containers/0/volumeMounts",
		"runtime-deployment.patch.yaml /spec/template/spec/containers/0/securityContext/readOnlyRootFilesystem",
		// the memory bounds: the request and limit, and GOMEMLIMIT
		"runtime-deployment.patch.yaml /spec/template/spec/containers/0/resources", "runtime-deployment.patch.yaml /spec/template/spec/containers/0/env/"},
	plan.PostgresMajorUpgrade: {"statefulset.patch.yaml /spec/replicas", "pdb.patch.yaml /spec/minAvailable", "pdb-primary.delete.yaml", "statefulset.patch.yaml /spec/template/spec/containers/0/image",
		"statefulset.patch.yaml /spec/updateStrategy/rollingUpdate/partition", "statefulset.patch.yaml /spec/template/spec/initContainers/1",
		// and removes the pre-flight check's Job
		"upgrade-check-"},
	plan.PostgresUpgradeCheck: {"upgrade-check-"},
}

// etcdTLSChanges are what the restart that moves an etcd cluster to a TLS
// mode changes besides a restart's own: the mode, the certificate rules
// of the runtime's Role, the pod's certificate volume, metrics port and
// the probe that reads it, and a cert-manager issuer's Certificates.
var etcdTLSChanges = []string{"cairn-config.patch.yaml /data/tls", "runtime-role.patch.yaml /rules",
	"statefulset.patch.yaml /spec/template/spec/containers/0/ports/", "statefulset.patch.yaml /spec/template/spec/containers/0/readinessProbe/httpGet/port",
	"statefulset.patch.yaml /spec/template/spec/containers/0/volumeMounts", "statefulset.patch.yaml /spec/template/spec/volumes",
	// with spec.tls.issuerRef, the issuer's Certificates and its keys
	"certificate-server.yaml", "certificate-superuser.yaml", "cairn-config.patch.yaml /data/tls.issuer."}

func TestOverlaysHoldOnlyTheirStep(t *testing.T) {
	r, _ := New(Options{}, Etcd(), Postgres())
	for _, rc := range renderCases {
		c, p := loadCase(t, rc)
		tree, _, err := r.Render(c, p, rc.step)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Steps {
			if s.Kind == plan.CreateCluster {
				continue
			}
			allowed := allowedChanges[s.Kind]
			if s.Kind == plan.UpgradeMember && s.Params.Template() != nil {
				// A template change riding the upgrade's first step.
				allowed = append(slices.Clone(allowed), allowedChanges[plan.RestartMember]...)
			}
			if rm := s.Params.RestartMember; rm != nil && rm.Template != nil && rm.Template.TLS != "" {
				allowed = append(slices.Clone(allowed), etcdTLSChanges...)
			}
			for _, change := range overlayChanges(t, tree, Root(c.Ref().Name)+"/"+StepDir(s.ID)) {
				if !slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(change, a) }) {
					t.Errorf("%s: step %s (%s) changes %s", rc.name, s.ID, s.Kind, change)
				}
			}
		}
	}
}

// overlayChanges lists "file op-path" for every patch op and "file" for
// every new resource of an overlay.
func overlayChanges(t *testing.T, tree Tree, dir string) []string {
	var k kustomization
	if err := yaml.Unmarshal(tree[dir+"/kustomization.yaml"], &k); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, res := range k.Resources[1:] {
		out = append(out, res)
	}
	for _, pt := range k.Patches {
		var ops []patchOp
		if err := yaml.Unmarshal(tree[dir+"/"+pt.Path], &ops); err != nil || len(ops) == 0 {
			out = append(out, pt.Path)
			continue
		}
		for _, op := range ops {
			out = append(out, pt.Path+" "+op.Path)
		}
	}
	return out
}

func TestRuntimeOwnedStateIsNeverRendered(t *testing.T) {
	r, _ := New(Options{}, Etcd(), Postgres())
	for _, rc := range renderCases {
		c, p := loadCase(t, rc)
		tree, _, err := r.Render(c, p, rc.step)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Build(tree, Root(c.Ref().Name))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(out, []byte("\n---\n")) {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					Template struct {
						Metadata struct {
							Labels map[string]string `json:"labels"`
						} `json:"metadata"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatal(err)
			}
			if _, ok := obj.Spec.Template.Metadata.Labels[contract.LabelRole]; ok {
				t.Errorf("%s: %s %s sets the runtime's role label on pods", rc.name, obj.Kind, obj.Metadata.Name)
			}
			if strings.HasSuffix(obj.Metadata.Name, "-cairn-status") || obj.Kind == "Lease" {
				t.Errorf("%s: renders the runtime's status object %s %s", rc.name, obj.Kind, obj.Metadata.Name)
			}
		}
	}
}

func TestBuildFailureNamesTheStep(t *testing.T) {
	r, _ := New(Options{}, Etcd(), Postgres())
	c, p := loadCase(t, caseNamed(t, "etcd-add-learner")) // two add steps
	tree, _, err := r.Render(c, p, "etcd-add-3")
	if err != nil {
		t.Fatal(err)
	}
	root := Root(c.Ref().Name)
	tree[root+"/steps/etcd-add-3/statefulset.patch.yaml"] = []byte("- op: replace\n  path: /spec/no/such/field\n  value: 1\n")
	_, err = buildAll(tree, root, []string{"base", "steps/etcd-add-3", "steps/etcd-add-4"}, "steps/etcd-add-3")
	if err == nil || !strings.Contains(err.Error(), "step etcd-add-3:") {
		t.Fatalf("err = %v, want it to name step etcd-add-3", err)
	}
}

func TestRenderRefusesWhatCannotBeRendered(t *testing.T) {
	r, _ := New(Options{}, Etcd(), Postgres())
	c, p := loadCase(t, caseNamed(t, "etcd-create"))
	if _, _, err := r.Render(c, p, ""); err == nil || !strings.Contains(err.Error(), "does not run yet") {
		t.Errorf("base of a cluster that does not exist: %v", err)
	}
	if _, _, err := r.Render(c, p, "nope"); err == nil || !strings.Contains(err.Error(), `has no step "nope"`) {
		t.Errorf("unknown step: %v", err)
	}
	other, _ := loadCase(t, caseNamed(t, "pg-create"))
	if _, _, err := r.Render(other, p, "create"); err == nil || !strings.Contains(err.Error(), "the plan is for EtcdCluster/e") {
		t.Errorf("plan of another cluster: %v", err)
	}
	if _, err := New(Options{EtcdRepository: "quay.io/coreos/etcd:v3"}); err == nil {
		t.Error("a repository with a tag is refused")
	}
}

func caseNamed(t *testing.T, name string) renderCase {
	for _, rc := range renderCases {
		if rc.name == name {
			return rc
		}
	}
	t.Fatalf("no render case %s", name)
	return renderCase{}
}
