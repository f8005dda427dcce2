package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/testbed/fleet"
)

// BenchmarkCLIFleet (make bench-fleet, docs/scale.md) measures what a user
// sees of cairn's commands over a generated fleet: each command a process
// of the built binary, as a CI job runs it, beside the kustomize CLI run
// once per rendered entry point over the same fleet, in one run:
//
//	make bench-fleet
//
// builds cairn and kustomize into .cache/bin and runs it at N = 1,000
// ($CAIRN_BENCH_FLEET sets N). It prints a table of the times and the
// ratios the goals are stated in: cairn render against the kustomize
// loop, and a no-op cairn propose against cairn plan.
// $CAIRN_BENCH_PROFILES, a folder, gets a CPU profile of each command.
func BenchmarkCLIFleet(b *testing.B) {
	bin, kustomize := os.Getenv("CAIRN_BENCH_BIN"), os.Getenv("CAIRN_BENCH_KUSTOMIZE")
	if bin == "" || kustomize == "" {
		b.Skip("make bench-fleet builds the binaries and sets $CAIRN_BENCH_BIN and $CAIRN_BENCH_KUSTOMIZE")
	}
	n := 1_000
	if v := os.Getenv(fleetMaxEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("$%s=%q: want the fleet's size", fleetMaxEnv, v)
		}
	}
	fl := fleet.New(n, fleetSeed)
	dir := b.TempDir()
	checkout := filepath.Join(dir, "checkout")
	for p, content := range fl.Files() {
		writeFleetFile(b, mkdirFor(b, filepath.Join(checkout, p)), []byte(content))
	}
	live := filepath.Join(dir, "live.yaml")
	writeFleetFile(b, live, fl.Live())
	env := append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	// cpu sums the processor time of the processes run: beside the
	// wall-clock times, it shows what a busier machine would make of them.
	cpu := map[string]time.Duration{}
	timed := func(name string, args ...string) time.Duration {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if profiles := os.Getenv("CAIRN_BENCH_PROFILES"); profiles != "" {
			cmd.Env = append(cmd.Env, profileEnv+"="+filepath.Join(profiles, strings.ReplaceAll(name, " ", "-")+".prof"))
		}
		cmd.Stdout = io.Discard
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s: cairn %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		cpu[name] = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return d
	}
	type row struct {
		what   string
		d, cpu time.Duration
	}
	var rows []row
	last := ""
	add := func(what string, d time.Duration) time.Duration {
		rows = append(rows, row{what, d, cpu[last]})
		return d
	}
	run := func(name string, args ...string) time.Duration {
		last = name
		return timed(name, args...)
	}
	// median3 runs a command that changes nothing three times and keeps
	// the median run (its wall clock and processor time): the short
	// commands vary by more than their own length from run to run.
	median3 := func(name string, args ...string) time.Duration {
		type sample struct{ d, cpu time.Duration }
		var s []sample
		for range 3 {
			d := timed(name, args...)
			s = append(s, sample{d, cpu[name]})
		}
		slices.SortFunc(s, func(a, b sample) int { return cmp.Compare(a.d, b.d) })
		last, cpu[name] = name, s[1].cpu
		return s[1].d
	}

	plan := add("cairn plan (median of 3)", median3("plan", "plan", "--repo", checkout, "--live", live))
	out := filepath.Join(dir, "rendered-out")
	render := add("cairn render (cold, into an empty folder)", run("render", "render", "--repo", checkout, "--live", live, "--out", out))
	entries, err := os.ReadDir(filepath.Join(out, "rendered"))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var loopCPU time.Duration
	for _, e := range entries {
		cmd := exec.Command(kustomize, "build", filepath.Join(out, "rendered", e.Name()))
		cmd.Stdout = io.Discard
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("kustomize build %s: %v\n%s", e.Name(), err, stderr.String())
		}
		loopCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	last, cpu["kustomize"] = "kustomize", loopCPU
	loop := add(fmt.Sprintf("kustomize build, once per rendered entry point (%d)", len(entries)), time.Since(start))

	// Locally: the pull requests kept in the repo.
	local := newFleetRepo(b, fl)
	proposeLocal := []string{"propose", "--repo", local.url, "--token-file", local.token, "--live", live, "--no-auto-merge"}
	add("cairn propose, first run (local pull requests)", run("first propose", proposeLocal...))
	noop := add("cairn propose, nothing changed (local, median of 3)", median3("no-op propose", proposeLocal...))
	add("cairn propose, nothing changed (local, --no-render-cache)", run("no-op propose without the cache", append(proposeLocal, "--no-render-cache")...))

	// On GitHub: the first pass, more writes than one hour's budget
	// allows a process, is made in-process without the budget; then the
	// command runs twice, and the second is timed.
	remote := newFleetRepo(b, fl)
	gh := githubtest.New(b)
	gh.UseRepo(remote.bare)
	ghToken := filepath.Join(dir, "gh-token")
	writeFleetFile(b, ghToken, []byte(gh.Token+"\n"))
	opts := githubOptions{repo: "org/gitops", api: gh.URL + "/", tokenFile: ghToken, noAutoMerge: true}
	if _, err := remote.unbudgeted(b, opts).pass(context.Background()); err != nil {
		b.Fatal(err)
	}
	proposeGH := []string{"propose", "--repo", remote.url, "--token-file", remote.token, "--live", live, "--no-auto-merge",
		"--github", "org/gitops", "--github-api", gh.URL + "/", "--github-token-file", ghToken}
	timed("propose on GitHub, to warm the cache", proposeGH...)
	noopGH := add("cairn propose, nothing changed (GitHub, median of 3)", median3("no-op propose on GitHub", proposeGH...))

	ratio := func(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ncairn over %d generated clusters (%d with a step), one process per command:\n", n, fl.Planned())
	fmt.Fprintf(w, "command\twall clock\tprocessor time\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%.2f s\t%.2f s\n", r.what, r.d.Seconds(), r.cpu.Seconds())
	}
	fmt.Fprintf(w, "cairn render / the kustomize loop\t%.2fx\t%.2fx\t(goal: at most 0.25x)\n", ratio(render, loop), ratio(cpu["render"], loopCPU))
	fmt.Fprintf(w, "no-op cairn propose / cairn plan\t%.1fx local, %.1fx GitHub\t(goal: at most 10x)\n", ratio(noop, plan), ratio(noopGH, plan))
	w.Flush()
	b.ReportMetric(plan.Seconds(), "plan-s")
	b.ReportMetric(render.Seconds(), "render-s")
	b.ReportMetric(loop.Seconds(), "kustomize-loop-s")
	b.ReportMetric(ratio(render, loop), "render/kustomize")
	b.ReportMetric(ratio(cpu["render"], loopCPU), "render-cpu/kustomize-cpu")
	b.ReportMetric(ratio(noop, plan), "noop-local/plan")
	b.ReportMetric(ratio(noopGH, plan), "noop-github/plan")
}

// mkdirFor makes path's folder and returns path.
func mkdirFor(b *testing.B, path string) string {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	return path
}
