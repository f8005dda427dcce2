package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func names(cs []Cluster) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Ref().String())
	}
	return strings.Join(out, " ")
}

func TestLoadRepo(t *testing.T) {
	const broken = "kind: StatefulSet\n"
	cases := []struct {
		name   string
		files  map[string]string
		links  map[string]string // link path -> target, relative to the repo
		layout Layout
		want   string // the clusters loaded, by Ref
		err    string // the error, with the repo path written as REPO
	}{
		{name: "the example fleet", files: map[string]string{
			"clusters/my-production-db.yaml": ReferenceDocuments[PostgresKind],
			"clusters/my-etcd-cluster.yaml":  ReferenceDocuments[EtcdKind],
		}, want: "EtcdCluster/my-etcd-cluster PostgresCluster/my-production-db"},
		{name: "sorted by name, recursively, .yml too", files: map[string]string{
			"clusters/b/z.yaml": sub(pgHead, `"db"`, "a-db"),
			"clusters/a/y.yml":  sub(etcdHead, `"etcd"`, "b-etcd"),
			"clusters/x.txt":    broken,
		}, want: "PostgresCluster/a-db EtcdCluster/b-etcd"},
		{name: "duplicate names across files", files: map[string]string{
			"clusters/a.yaml":      pgHead,
			"clusters/team/b.yaml": sub(etcdHead, `"etcd"`, `"db"`),
		}, err: `REPO/clusters/team/b.yaml:4:9: metadata.name: cluster name "db" is already used by PostgresCluster at REPO/clusters/a.yaml:4; names are unique in a repo (each renders to rendered/db/)`},
		{name: "duplicate names in one file", files: map[string]string{
			"clusters/a.yaml": pgHead + "---\n" + pgHead,
		}, err: `REPO/clusters/a.yaml:13:9: metadata.name: cluster name "db" is already used by PostgresCluster at REPO/clusters/a.yaml:4; names are unique in a repo (each renders to rendered/db/)`},
		{name: "errors of every file", files: map[string]string{
			"clusters/a.yaml": broken,
			"clusters/b.yaml": sub(pgHead, "instances: 3", "instances: x"),
		}, err: "REPO/clusters/a.yaml:1:7: kind: unknown kind \"StatefulSet\"; valid kinds: EtcdCluster (etcd.database.coreos.com/v1beta2), PostgresCluster (db.example.com/v1alpha1)\n" +
			"REPO/clusters/b.yaml:7:14: spec.instances: must be a whole number, got the string \"x\""},
		{name: "Kubernetes' own namespaces are refused", files: map[string]string{
			"clusters/a.yaml": sub(pgHead, `name: "db"`, "name: \"db\"\n  namespace: kube-system"),
		}, err: `REPO/clusters/a.yaml:5:14: metadata.namespace: "kube-system" is Kubernetes' own namespace; a database never runs there`},
		{name: "a namespace outside the allowed ones", layout: Layout{Namespaces: []string{"db", "staging"}}, files: map[string]string{
			"clusters/a.yaml": sub(pgHead, `name: "db"`, "name: \"db\"\n  namespace: payments"),
			"clusters/b.yaml": sub(sub(etcdHead, `"etcd"`, "e"), "name: e", "name: e\n  namespace: staging"),
			"clusters/c.yaml": sub(pgHead, `"db"`, "c"),
		}, err: `REPO/clusters/a.yaml:5:14: metadata.namespace: namespace "payments" is not one cairn may deploy to here (--allowed-namespaces: db, staging)`},
		{name: "allowed namespaces, and none named", layout: Layout{Namespaces: []string{"staging"}}, files: map[string]string{
			"clusters/b.yaml": sub(sub(etcdHead, `"etcd"`, "e"), "name: e", "name: e\n  namespace: staging"),
			"clusters/c.yaml": sub(pgHead, `"db"`, "c"),
		}, want: "PostgresCluster/c EtcdCluster/e"},
		{name: "rendered folder under clusters is skipped", files: map[string]string{
			"clusters/db.yaml":                          pgHead,
			"clusters/rendered/db/statefulset.yaml":     broken,
			"clusters/team/rendered/kustomization.yaml": broken,
			"rendered/db/statefulset.yaml":              broken,
		}, want: "PostgresCluster/db"},
		{name: "rendered dir configured under the specs", layout: Layout{SpecsDir: "specs", RenderedDir: "specs/out"}, files: map[string]string{
			"specs/db.yaml":    pgHead,
			"specs/out/x.yaml": broken,
			"clusters/x.yaml":  broken,
		}, want: "PostgresCluster/db"},
		{name: "hidden folders are skipped", files: map[string]string{
			"clusters/db.yaml":          pgHead,
			"clusters/.git/config.yaml": broken,
			"clusters/.cache/a/b.yaml":  broken,
		}, want: "PostgresCluster/db"},
		{name: "symlink outside the repo is refused", files: map[string]string{
			"clusters/db.yaml": pgHead,
		}, links: map[string]string{"clusters/etcd.yaml": "../../outside.yaml"},
			err: `REPO/clusters/etcd.yaml: symlink cannot be followed: path escapes from parent`},
		{name: "symlink inside the repo is followed", files: map[string]string{
			"shared/etcd.yaml": etcdHead,
		}, links: map[string]string{"clusters/etcd.yaml": "../shared/etcd.yaml"}, want: "EtcdCluster/etcd"},
		{name: "dangling symlink", files: map[string]string{"clusters/db.yaml": pgHead},
			links: map[string]string{"clusters/gone.yaml": "nowhere.yaml"},
			err:   `REPO/clusters/gone.yaml: symlink cannot be followed: no such file or directory`},
		{name: "no specs dir", files: map[string]string{"README.md": "x"},
			err: `specs dir REPO/clusters: no such file or directory`},
		{name: "specs dir outside the repo", layout: Layout{SpecsDir: "../x"},
			err: `specs dir "../x" and rendered dir "rendered" must be relative paths inside the repo`},
		{name: "empty specs dir", files: map[string]string{"clusters/README.md": "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			if err := os.WriteFile(filepath.Join(parent, "outside.yaml"), []byte(etcdHead), 0o644); err != nil {
				t.Fatal(err)
			}
			repo := filepath.Join(parent, "repo")
			for name, content := range c.files {
				writeFile(t, filepath.Join(repo, filepath.FromSlash(name)), content)
			}
			for link, target := range c.links {
				p := filepath.Join(repo, filepath.FromSlash(link))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.FromSlash(target), p); err != nil {
					t.Skipf("symlinks: %v", err)
				}
			}
			if err := os.MkdirAll(repo, 0o755); err != nil {
				t.Fatal(err)
			}
			cs, err := LoadRepo(repo, c.layout)
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), repo, "REPO")
			}
			if got != c.err {
				t.Errorf("error:\ngot  %q\nwant %q", got, c.err)
			}
			if names(cs) != c.want {
				t.Errorf("loaded %q, want %q", names(cs), c.want)
			}
		})
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadExampleFleet(t *testing.T) {
	cs, err := LoadRepo("../../examples/fleet", DefaultLayout)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(cs); got != "EtcdCluster/my-etcd-cluster PostgresCluster/my-production-db" {
		t.Errorf("loaded %q", got)
	}
	if f := cs[1].Source().File; f != filepath.Join("../../examples/fleet", "clusters", "my-production-db.yaml") {
		t.Errorf("source file %q", f)
	}
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "db.yaml"), pgHead)
	writeFile(t, filepath.Join(dir, "a", "rendered", "x.yaml"), "kind: x\n")
	writeFile(t, filepath.Join(dir, "a", ".hidden", "x.yaml"), "kind: x\n")
	writeFile(t, filepath.Join(dir, "etcd.yaml"), etcdHead)
	cs, err := LoadPaths([]string{filepath.Join(dir, "a"), filepath.Join(dir, "etcd.yaml")})
	if err != nil || names(cs) != "PostgresCluster/db EtcdCluster/etcd" {
		t.Errorf("loaded %q, %v", names(cs), err)
	}
	if _, err := LoadPaths([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing path loaded")
	}
}
