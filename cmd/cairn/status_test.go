package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// statusNow is the time the status golden tests show ages at.
const statusNow = "2026-11-30T05:00:00Z"

// longName is the longest cluster name a spec may have.
const longName = "a-cluster-name-that-is-as-long-as-cairn-lets-it-be-x"

// onTerminal makes the test's output look as it does on a terminal with
// colour.
func onTerminal(t *testing.T) {
	t.Helper()
	saved := terminal
	terminal = func(io.Writer) bool { return true }
	t.Setenv("NO_COLOR", "")
	os.Unsetenv("NO_COLOR")
	t.Cleanup(func() { terminal = saved })
}

// TestStatusGolden: the fleet table and one cluster's view, piped and on
// a terminal, as text and data, with every plan status, the longest name
// and the largest plan (22 steps).
func TestStatusGolden(t *testing.T) {
	repo := "testdata/status-fleet"
	base := []string{"status", "--repo", repo, "--live", repo + "/live.yaml", "--now", statusNow}
	for _, c := range []struct {
		golden string
		args   []string
		tty    bool
		code   int
	}{
		{"status-fleet.txt", nil, false, exitRefusals},
		{"status-fleet.tty", nil, true, exitRefusals},
		{"status-fleet.json", []string{"-o", "json"}, false, exitRefusals},
		{"status-long.txt", []string{longName}, false, exitOK},
		{"status-long.tty", []string{longName}, true, exitOK},
		{"status-db.txt", []string{"my-production-db"}, false, exitOK},
		{"status-db.yaml", []string{"PostgresCluster/my-production-db", "-o", "yaml"}, false, exitOK},
		{"status-waiting.txt", []string{"orders"}, false, exitOK},
		{"status-converged.tty", []string{"kv"}, true, exitOK},
		{"status-refused.txt", []string{"too-big"}, false, exitRefusals},
	} {
		t.Run(c.golden, func(t *testing.T) {
			if c.tty {
				onTerminal(t)
			}
			code, out, errOut := cairn(t, append(base, c.args...)...)
			if code != c.code || errOut != "" {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errOut)
			}
			golden(t, c.golden, out)
		})
	}
}

// TestStatusAlignsOnlyOnATerminal: piped, the cells are separated by
// tabs and carry no colour; on a terminal every row of the fleet table
// starts each column at the same place, however long the names.
func TestStatusAlignsOnlyOnATerminal(t *testing.T) {
	repo := "testdata/status-fleet"
	args := []string{"status", "--repo", repo, "--live", repo + "/live.yaml", "--now", statusNow}
	_, piped, _ := cairn(t, args...)
	if strings.Contains(piped, "\x1b[") || !strings.Contains(piped, longName+"\tEtcdCluster\t") {
		t.Errorf("piped output:\n%q", piped)
	}
	onTerminal(t)
	_, tty, _ := cairn(t, args...)
	plainText := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(tty, "")
	if strings.Contains(plainText, "\t") || !strings.Contains(tty, "\x1b[31mRefused\x1b[0m") {
		t.Fatalf("terminal output:\n%q", tty)
	}
	lines := strings.Split(strings.TrimSuffix(plainText, "\n"), "\n")
	col := strings.Index(lines[0], "KIND")
	for _, l := range lines[1:] {
		if l[col-2:col] != "  " || l[col] == ' ' {
			t.Errorf("KIND column not at %d:\n%s", col, l)
		}
	}
	t.Setenv("NO_COLOR", "1")
	if _, out, _ := cairn(t, args...); strings.Contains(out, "\x1b[") || out != plainText {
		t.Errorf("NO_COLOR output differs from the terminal output without colour:\n%s", out)
	}
}

// TestStatusWithPullRequests: against a repo cairn proposed into, status
// shows each next step's pull request, and once a person merged one, that
// step as the merged one with its gates after it.
func TestStatusWithPullRequests(t *testing.T) {
	bare := gitbed.New(t, exampleFiles(t))
	liveFile := "../../examples/fleet/live.yaml"
	if code, out, errOut := cairn(t, "propose", "--repo", bare, "--live", liveFile); code != exitOK {
		t.Fatalf("propose: exit %d\n%s\n%s", code, out, errOut)
	}
	args := []string{"status", "--repo", bare, "--live", liveFile, "--now", statusNow}
	code, out, errOut := cairn(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "status-proposed.txt", out)

	gitbed.Merge(t, bare, "cairn/my-etcd-cluster/etcd-add-1")
	code, out, errOut = cairn(t, append(args, "my-etcd-cluster")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "status-merged.txt", out)
}

// TestStatusReadsACheckoutAsPlanDoes: a checkout's specs are read as they
// are, uncommitted edits too; its pull requests come from its records.
func TestStatusReadsACheckoutAsPlanDoes(t *testing.T) {
	bare := gitbed.New(t, exampleFiles(t))
	liveFile := "../../examples/fleet/live.yaml"
	if code, _, errOut := cairn(t, "propose", "--repo", bare, "--live", liveFile); code != exitOK {
		t.Fatalf("propose: %s", errOut)
	}
	checkout := cloneCheckout(t, bare)
	spec := filepath.Join(checkout, "clusters/my-etcd-cluster.yaml")
	data, _ := os.ReadFile(spec)
	if err := os.WriteFile(spec, []byte(strings.Replace(string(data), "size: 3", "size: 9", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cairn(t, "status", "--repo", checkout, "--live", liveFile)
	if code != exitRefusals || !strings.Contains(out, "my-etcd-cluster\tEtcdCluster\t1/1\t3.2.13\tRefused") ||
		!strings.Contains(out, "my-production-db\tPostgresCluster\t2/2\t14.5\tPlanned (1 step)\tpg-add-2\topen") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
}

// cloneCheckout clones bare into a new folder with a work tree, as a
// person does.
func cloneCheckout(t *testing.T, bare string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: bare}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStatusErrors(t *testing.T) {
	repo := "testdata/status-fleet"
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nope"}, exitUsage, `no cluster "nope" in the repo's specs (it has `},
		{[]string{"-o", "xml"}, exitUsage, "-o must be text, json or yaml"},
		{[]string{"a", "b"}, exitUsage, "accepts at most 1 arg"},
		{[]string{"--github", "nope"}, exitUsage, "--github must be OWNER/REPO"},
	} {
		args := append([]string{"status", "--repo", repo, "--live", repo + "/live.yaml"}, c.args...)
		if code, _, errOut := cairn(t, args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %s", c.args, code, errOut)
		}
	}
}
