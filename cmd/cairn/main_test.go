package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/testbed/gitbed"
)

var update = flag.Bool("update", false, "rewrite golden files")

func cairn(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/cairn -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./cmd/cairn -update):\n%s", name, got)
	}
}

func TestPlanExample(t *testing.T) {
	for _, format := range []string{"table", "json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := cairn(t, "plan", "--repo", "../../examples/fleet", "--live", "../../examples/fleet/live.yaml", "-o", format)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden(t, "plan-fleet."+format, out)
		})
	}
}

func TestPlanWithoutLiveCreates(t *testing.T) {
	code, out, _ := cairn(t, "plan", "--repo", "../../examples/fleet")
	if code != exitOK || strings.Count(out, "  create  ") != 2 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const etcd8 = `apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata:
  name: big
spec:
  size: 8
  version: "3.5.21"
`

func TestExitCodes(t *testing.T) {
	refused := writeRepo(t, map[string]string{"clusters/big.yaml": etcd8})
	typo := writeRepo(t, map[string]string{"clusters/typo.yaml": strings.Replace(etcd8, "size: 8", "sise: 3", 1)})
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"refusal", []string{"plan", "--repo", refused}, exitRefusals, ""},
		{"typo", []string{"plan", "--repo", typo}, exitInvalid, `clusters/typo.yaml:6:3: spec.sise: unknown field "sise" (did you mean "size"?)`},
		{"bad output", []string{"plan", "--repo", refused, "-o", "xml"}, exitUsage, "-o must be table, json or yaml"},
		{"no repo", []string{"plan"}, exitUsage, `required flag(s) "repo" not set`},
		{"missing live", []string{"plan", "--repo", refused, "--live", "/nonexistent"}, exitInvalid, "read live state"},
		{"validate ok", []string{"validate", "../../examples/fleet"}, exitOK, ""},
		{"validate refusal", []string{"validate", refused}, exitInvalid, "big.yaml:6:9: spec.size: etcd size must be 1 to 7, got 8"},
		{"validate typo", []string{"validate", filepath.Join(typo, "clusters", "typo.yaml")}, exitInvalid, `spec.sise: unknown field`},
		{"validate nothing", []string{"validate"}, exitUsage, "requires at least 1 arg"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"github without a slash", []string{"propose", "--repo", gitbed.New(t, map[string]string{"clusters/x.yaml": etcd8}), "--github", "nope"}, exitUsage, "--github must be OWNER/REPO"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := cairn(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nwant it to contain %q", code, tc.code, errOut, tc.stderr)
			}
		})
	}
}

func TestRefusalIsShown(t *testing.T) {
	repo := writeRepo(t, map[string]string{"clusters/big.yaml": etcd8})
	_, out, _ := cairn(t, "plan", "--repo", repo)
	if !strings.Contains(out, "refused (etcd-size-range): etcd size must be 1 to 7, got 8") {
		t.Errorf("table output:\n%s", out)
	}
}

func TestRenderTwiceChangesNothing(t *testing.T) {
	repo := t.TempDir()
	for _, f := range []string{"clusters/my-etcd-cluster.yaml", "clusters/my-production-db.yaml", "live.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../examples/fleet", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"render", "--repo", repo, "--live", filepath.Join(repo, "live.yaml")}
	if code, out, errOut := cairn(t, args...); code != exitOK || !strings.Contains(out, "rendered/my-production-db (") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	code, out, _ := cairn(t, args...)
	if code != exitOK || strings.Count(out, "(0 file(s) changed)") != 2 {
		t.Fatalf("second render changed files:\n%s", out)
	}
	// A stale file in a cluster's folder is removed; other folders are not touched.
	stale := filepath.Join(repo, "rendered/my-production-db/steps/old/kustomization.yaml")
	other := filepath.Join(repo, "rendered/someone-else/keep.yaml")
	for _, f := range []string{stale, other} {
		_ = os.MkdirAll(filepath.Dir(f), 0o755)
		_ = os.WriteFile(f, []byte("x"), 0o644)
	}
	cairn(t, args...)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale file kept: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("unrelated folder touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "rendered/my-production-db/steps")); err != nil {
		t.Error(err)
	}
}

func TestRenderRefusesBadSpecWithoutWriting(t *testing.T) {
	repo := writeRepo(t, map[string]string{"clusters/big.yaml": strings.Replace(etcd8, "size: 8", "size: 3\n  bogus: 1", 1)})
	code, _, errOut := cairn(t, "render", "--repo", repo)
	if code != exitInvalid || !strings.Contains(errOut, `unknown field "bogus"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(repo, "rendered")); !os.IsNotExist(err) {
		t.Errorf("rendered/ written for an invalid spec: %v", err)
	}
}

// mustReplace replaces the first old in s with new, failing the test when
// s holds no old: an edit of a fixture that matches nothing would test
// nothing.
func mustReplace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("the fixture holds no %q", old)
	}
	return strings.Replace(s, old, new, 1)
}
