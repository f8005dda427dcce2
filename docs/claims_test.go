package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A claim is a sentence of the docs saying that something is not built
// (yet). Each is tied to what shows it true today: a probe that fails
// once the thing exists, so whoever builds it must update the doc.
type claim struct {
	// file and text find the claim: the doc and a part of its line.
	file, text string
	// absent: Go code (outside tests) under dir that would exist once
	// the claimed thing is built; finding it fails the test.
	absent []probe
	// checked is, for a claim no code search can decide (a known
	// limitation, a race), why it is still true, as last reviewed.
	checked string
}

type probe struct {
	dir string
	re  *regexp.Regexp
}

func absent(dir, re string) probe { return probe{dir, regexp.MustCompile(re)} }

// claims are every "not built" sentence of README.md and docs/*.md.
var claims = []claim{
	{file: "README.md", text: "what is not rendered yet", checked: "points at rendering.md's \"Not yet\" section, whose claims are tied below"},
	{file: "rendering.md", text: "## Not yet", checked: "a heading: its bullets are tied below"},
	// Keeping the runtime's image would observe it (live.Runtime) and
	// plan its change, as the members' images are.
	{file: "rendering.md", text: "The runtime Deployment's image is not kept as it runs yet", absent: []probe{absent("../planner", `Runtime\.Image|RuntimeImage`)}},
	{file: "rendering.md", text: "the runtime's own image is not yet (below)", absent: []probe{absent("../planner", `Runtime\.Image|RuntimeImage`)}},
	{file: "backups.md", text: "## Not built yet", checked: "a heading: its bullets are tied below"},
	{file: "backups.md", text: "Tablespaces outside the data directory are refused", absent: []probe{absent("../runtime/backup", `(?i)tablespace map|TablespaceMap`)}},
	{file: "backups.md", text: "Backups are not encrypted by cairn", absent: []probe{absent("../runtime/backup", `crypto/cipher|crypto/aes`)}},
	{file: "security.md", text: "### Not built yet (issue 40)", checked: "a heading: its bullets are tied below"},
	{file: "security.md", text: "**Per-cluster identity on shared issuers (item 3).**", checked: "issue 40 item 3 is open: runtime/pki issues certificates with a CN and DNS names or IPs only, and neither pg_ident nor etcd's flags check a cluster identity"},
	{file: "security.md", text: "**Members proven by certificate (item 4).**", checked: "issue 40 item 4 is open: under accept the PostgreSQL runtime falls back to a plain connection with the password (runtime/agent/postgres/tls.go memberConfig's Fallbacks)"},
	{file: "security.md", text: "**Secrets out of the server's reach (parts of item 5)**", checked: "issue 40 item 5 is open: the instance manager's environment is not emptied before the server starts"},
	{file: "security.md", text: "**Parts of item 8**", checked: "the observe Role is deploy/reconcile/rbac.yaml's and the chart's cairn-reconcile-observe, with no resourceNames on configmaps and list on pods; renderer/pod.go's installContainer and renderer/postgres.go's pgUpgradeContainer set no Resources"},
	{file: "security.md", text: "**The admission policy is not installed with each cluster**", absent: []probe{absent("../renderer", `ValidatingAdmissionPolicy`)}},
	{file: "README.md", text: "v2 detected, not yet run here", checked: "this machine is cgroup v1 and no v2 host is reachable from it; testbed/kubenode/cgroup.go configures both, TestCgroupsDetectedAndConfigured checks the configuration on fake /sys roots"},
	{file: "backups.md", text: "A pin is recorded on the first backup to complete while a request is", checked: "the pin is taken when a backup completes under a named request (runtime/backup/pin.go), not tied to the request's start"},
}

// notClaims are lines with a trigger word that say nothing about what
// cairn lacks.
var notClaims = []string{
	"members not ready or not yet",
	"etcd learners not yet promoted",
	"(not yet: the last backup, taken at 2026-11-29T06:00:00Z, is older than 24h)",
	"with neither, nothing is deployed yet",
	"has not taken effect yet is planned",
	"A cluster that does not run yet gets two steps",
	"an etcd learner not started yet",
	"label is `primary` (or not set yet",
	"revision and it has not loaded it yet",
	"without one, nothing is deployed",
	"yet and every cluster gets a create step",
	"objects not there yet are diffed against",
	"hold yet (a step published without the reconcile loop's hold)",
	"A pod with no role label yet is in neither budget",
}

var trigger = regexp.MustCompile(`(?i)\bnot built\b|\bnot rendered\b|\byet\b`)

// TestNotBuiltClaimsAreTrue finds every claim that something is not
// built, in README.md and docs/*.md, and checks it against its probe.
func TestNotBuiltClaimsAreTrue(t *testing.T) {
	files := []string{"../README.md"}
	md, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, md...)
	used := make([]bool, len(claims))
	for _, f := range files {
		lines := readLines(t, f)
		inSection := false
		for i, line := range lines {
			if strings.HasPrefix(line, "#") {
				inSection = regexp.MustCompile(`(?i)not built|not yet`).MatchString(line)
			}
			bullet := inSection && strings.HasPrefix(line, "- ")
			if !trigger.MatchString(line) && !bullet {
				continue
			}
			if !bullet && isNotClaim(line) {
				continue
			}
			k := find(filepath.Base(f), line)
			if k < 0 {
				t.Errorf("%s:%d: a claim that something is not built, tied to nothing: add it to claims with a probe (or to notClaims if it is no such claim):\n\t%s", f, i+1, line)
				continue
			}
			used[k] = true
		}
	}
	for k, c := range claims {
		if !used[k] {
			t.Errorf("claim %q is no longer in %s: remove it from claims", c.text, c.file)
			continue
		}
		if len(c.absent) == 0 && c.checked == "" {
			t.Errorf("claim %q in %s has neither a probe nor a reason", c.text, c.file)
		}
		for _, p := range c.absent {
			if where := grep(t, p); where != "" {
				t.Errorf("%s says %q, but %s looks like it is built: update the doc and this claim", c.file, c.text, where)
			}
		}
	}
}

func find(file, line string) int {
	for k, c := range claims {
		if c.file == file && strings.Contains(line, c.text) {
			return k
		}
	}
	return -1
}

func isNotClaim(line string) bool {
	for _, s := range notClaims {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// grep returns the first place in p.dir's Go files (tests excluded) where
// p.re matches, "" when none does.
func grep(t *testing.T, p probe) string {
	t.Helper()
	found := ""
	err := filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := p.re.FindIndex(b); loc != nil {
			found = path + ": " + string(b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
