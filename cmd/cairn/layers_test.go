package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/cairn-dev/cairn"

// The direction of imports (docs/architecture.md), checked on what each
// product package links (its transitive imports, tests left out).
func TestImportRules(t *testing.T) {
	deps := productDeps(t)
	rules := []struct {
		pkg    string // a package, or a folder ending in "/..."
		never  []string
		reason string
	}{
		{"planner/...", []string{module + "/runtime", module + "/publish", module + "/renderer", module + "/reconcile"}, "the planner is pure: it never acts"},
		{"renderer", []string{"github.com/go-git/go-git", "github.com/google/go-github", "k8s.io/client-go", module + "/runtime", module + "/publish"}, "the renderer never touches Git, GitHub or a cluster"},
		{"runtime/...", []string{module + "/renderer", module + "/publish", module + "/planner/observe"}, "the runtime never renders or publishes"},
		{"planner/contract", []string{module + "/"}, "the contract imports nothing of cairn's"},
		{"policies", []string{module + "/runtime", module + "/publish", module + "/renderer"}, "policies judge plans only"},
	}
	for _, r := range rules {
		for pkg, ds := range deps {
			if !matches(pkg, r.pkg) {
				continue
			}
			for _, d := range ds {
				for _, bad := range r.never {
					if d == bad || strings.HasPrefix(d, strings.TrimSuffix(bad, "/")+"/") {
						t.Errorf("%s imports %s: %s", pkg, d, r.reason)
					}
				}
			}
		}
	}
	for pkg, ds := range deps {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/testbed") && !strings.HasPrefix(pkg, module+"/testbed") {
				t.Errorf("product package %s imports the test bed %s", pkg, d)
			}
		}
	}
}

func matches(pkg, pattern string) bool {
	p := module + "/" + strings.TrimSuffix(pattern, "/...")
	return pkg == p || strings.HasSuffix(pattern, "/...") && strings.HasPrefix(pkg, p+"/")
}

// productDeps are the transitive imports of every package of the module,
// without its tests.
func productDeps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		deps[p.ImportPath] = p.Deps
	}
	if len(deps) < 10 {
		t.Fatalf("go list found only %d packages", len(deps))
	}
	return deps
}
