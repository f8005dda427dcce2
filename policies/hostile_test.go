package policies

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/testbed/alloc"
)

var hostileNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// generated are hostile policy files written by the test rather than kept
// in testdata: a NUL makes a binary file.
var generated = map[string]string{
	"nul.yaml": "# A NUL byte.\napiVersion: cairn.dev/v1alpha1\nkind: Policy\nmetadata: {name: hostile}\nspec:\n  selector: {a: \"b\x00\"}\n",
	// The densest values 1 MiB holds: refused at the 20,001st once
	// yaml.v3 has built the tree, about 132 MB (the size limit bounds it).
	"dense.yaml": "[" + strings.Repeat("a,", 1<<19-1) + "]",
}

// TestHostilePolicyCorpus loads each file of testdata/hostile, and each of
// generated, as the only policy file of a repo: each is refused with a
// clear error, within a bound on the memory it costs to find out.
func TestHostilePolicyCorpus(t *testing.T) {
	for _, c := range []struct {
		file, want string
		maxAlloc   uint64
	}{
		{"aliased-rules.yaml", "aliased-rules.yaml:8:5: spec.rules[100]: more than 100 CEL rules in the policies; cairn loads at most that many", 8 << 20},
		{"costly-rules.yaml", "costly-rules.yaml:12:17: spec.rules[1].expression: the rules together may cost up to 115522 on one step; the limit is 100000", 4 << 20},
		{"laughs.yaml", "spec.rules[9]: must be a mapping of fields, got a list", 1 << 20},
		{"many-errors.yaml", "more than 200 problems in the policies; stopping here", 2 << 20},
		{"long-expression.yaml", "spec.rules[0].expression: the expression is longer than 4096 characters", 1 << 20},
		{"runaway-rule.yaml", "spec.rules[0].expression: may cost up to", 1 << 20},
		{"deep.yaml", "spec.selector.a: must be a string, got a mapping", 8 << 20},
		{"nul.yaml", "file contains a NUL byte", 1 << 20},
		{"many-documents.yaml", "more than 100 documents in one file", 1 << 20},
		{"dense.yaml", "dense.yaml:1:40000: the document holds more than 20000 values", 160 << 20},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, ok := []byte(generated[c.file]), generated[c.file] != ""
			var err error
			if !ok {
				if data, err = os.ReadFile(filepath.Join("testdata", "hostile", c.file)); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(t.TempDir(), "policies")
			writePolicy(t, filepath.Join(dir, c.file), string(data))
			used := alloc.Bytes(func() { _, err = LoadDir(dir, hostileNow) })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %.600v\nwant %q", err, c.want)
			}
			if n := strings.Count(err.Error(), "\n"); n > maxErrors+1 {
				t.Errorf("%d problems reported", n)
			}
			if used > c.maxAlloc {
				t.Errorf("allocated %d bytes; the bound is %d", used, c.maxAlloc)
			}
			t.Logf("allocated %d KiB", used>>10)
		})
	}
}

// TestHostilePolicyFiles: what is not a policy file is refused fast, with
// nothing read from outside the repo and no content echoed.
func TestHostilePolicyFiles(t *testing.T) {
	const secret = "SECRET-CONTENT-OUTSIDE-THE-REPO"
	for _, c := range []struct {
		name  string
		build func(t *testing.T, repo string)
		want  string
	}{
		{"a symlink to /dev/zero", func(t *testing.T, repo string) {
			symlink(t, "/dev/zero", filepath.Join(repo, "policies", "zero.yaml"))
		}, "policies/zero.yaml: symlink cannot be followed: path escapes from parent"},
		{"a symlink to a file outside the repo", func(t *testing.T, repo string) {
			symlink(t, "../../outside.yaml", filepath.Join(repo, "policies", "out.yaml"))
		}, "policies/out.yaml: symlink cannot be followed: path escapes from parent"},
		{"the policies folder a symlink out of the repo", func(t *testing.T, repo string) {
			symlink(t, "..", filepath.Join(repo, "policies"))
		}, "policies: path escapes from parent"},
		{"a FIFO", func(t *testing.T, repo string) {
			if err := syscall.Mkfifo(filepath.Join(repo, "policies", "fifo.yaml"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "policies/fifo.yaml: not a regular file (p---------)"},
		{"a file over 1 MiB", func(t *testing.T, repo string) {
			writePolicy(t, filepath.Join(repo, "policies", "big.yaml"), policyHead+"# "+strings.Repeat(secret, 40000)+"\n")
		}, "policies/big.yaml: file is 1240076 bytes; the limit is 1048576"},
		{"101 policy files", func(t *testing.T, repo string) {
			for i := range 101 {
				writePolicy(t, filepath.Join(repo, "policies", fmt.Sprintf("p%d.yaml", i)), policyHead+"  concurrency: {maxInFlight: 1}\n")
			}
		}, "101 policy files; cairn reads at most 100"},
		{"a folder of 1,001 entries", func(t *testing.T, repo string) {
			for i := range 1001 {
				writePolicy(t, filepath.Join(repo, "policies", fmt.Sprintf("x%d", i)), "")
			}
		}, "more than 1000 entries; cairn reads at most that many"},
		{"a file name that breaks a code block", func(t *testing.T, repo string) {
			writePolicy(t, filepath.Join(repo, "policies", "a\n```\nb.yaml"), "kind: x\n")
		}, `policies/a\n` + "```" + `\nb.yaml":1:1: apiVersion and kind must be`},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			writePolicy(t, filepath.Join(parent, "outside.yaml"), secret)
			repo := filepath.Join(parent, "repo")
			if err := os.MkdirAll(filepath.Join(repo, "policies"), 0o755); err != nil {
				t.Fatal(err)
			}
			if c.name == "the policies folder a symlink out of the repo" {
				os.Remove(filepath.Join(repo, "policies"))
			}
			c.build(t, repo)
			var err error
			done := make(chan struct{})
			var used uint64
			go func() {
				defer close(done)
				used = alloc.Bytes(func() { _, err = LoadDir(filepath.Join(repo, "policies"), hostileNow) })
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the load hangs")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %.600v\nwant %q", err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the file's content: %.300v", err)
			}
			if used > 2<<20 {
				t.Errorf("allocated %d bytes; the bound is 2 MiB", used)
			}
		})
	}
}

// TestRulesShareOneBudgetPerStep: however many rules run on a step, their
// actual cost together stops at RepoLimits.MaxCost, and the rules past it
// hold the step without running.
func TestRulesShareOneBudgetPerStep(t *testing.T) {
	var set Set
	for i := range 300 {
		r, err := CompileRule(fmt.Sprintf("r%03d", i), fmt.Sprintf(`cluster.labels.all(a, cluster.labels.all(b, a != b || a == b || b == "%d")) ? {"verdict": "allow"} : {"verdict": "hold"}`, i), hostileNow, nil)
		if err != nil {
			t.Fatal(err)
		}
		set = append(set, r)
	}
	var labels []string
	for i := range 64 {
		labels = append(labels, fmt.Sprintf("k%d: v", i))
	}
	in := Input{Cluster: cluster(t, strings.Join(labels, ", ")), Step: plan.Step{Disruptive: true}}
	var ds []plan.Decision
	used := alloc.Bytes(func() { ds = set.Evaluate(in) })
	ran, held := 0, 0
	for _, d := range ds {
		switch {
		case d.Verdict == plan.Allow:
			ran++
		case d.Verdict == plan.Hold && strings.Contains(d.Reason, "the rule was not run"):
			held++
		default:
			t.Fatalf("decision %+v", d)
		}
	}
	if ran == 0 || held == 0 || ran+held != 300 {
		t.Fatalf("%d rules ran, %d held unrun", ran, held)
	}
	if used > 8<<20 {
		t.Errorf("allocated %d bytes; the bound is 8 MiB", used)
	}
	t.Logf("%d rules ran, %d held; %d KiB allocated", ran, held, used>>10)
}

func writePolicy(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
}

// TestPolicyBytesAreBoundedPerRepo: past RepoLimits.MaxBytes, the next
// file is not read.
func TestPolicyBytesAreBoundedPerRepo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "policies")
	for i := range 5 {
		writePolicy(t, filepath.Join(dir, fmt.Sprintf("p%d.yaml", i)), policyHead+"  concurrency: {maxInFlight: 1}\n# "+strings.Repeat("x", 1_000_000)+"\n")
	}
	var err error
	used := alloc.Bytes(func() { _, err = LoadDir(dir, hostileNow) })
	if err == nil || !strings.Contains(err.Error(), "p3.yaml: not read: the policy files before it hold more than 2097152 bytes") {
		t.Fatalf("error %.600v", err)
	}
	if used > 40<<20 {
		t.Errorf("allocated %d bytes; the bound is 40 MiB", used)
	}
	t.Logf("allocated %d KiB", used>>10)
}
