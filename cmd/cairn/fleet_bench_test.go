package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/reconcile"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/fleet"
)

// The fleet benchmarks (docs/testing.md, "Fleet benchmark"): cairn's loop,
// wired as cairn reconcile wires it, over a GitOps repo of N generated
// clusters (testbed/fleet) served by a real git server over HTTP.
//
//	go test ./cmd/cairn -run '^$' -bench '^BenchmarkFleet' -benchtime 1x -timeout 0
//
// runs N = 100 and 1,000; N = 10,000 runs when $CAIRN_BENCH_FLEET, the
// largest N to run, is 10000 or more (CAIRN_BENCH_FLEET=100 runs only
// N = 100; -bench 'Fleet/N=100$' picks sizes too).

// fleetSeed draws the benchmarks' fleets.
const fleetSeed = 20

// fleetSizes are the sizes the benchmarks report.
var fleetSizes = []int{100, 1_000, 10_000}

// fleetMaxEnv is the largest N to run; default 1,000.
const fleetMaxEnv = "CAIRN_BENCH_FLEET"

func skipAbove(b *testing.B, n int) {
	limit := 1_000
	if v := os.Getenv(fleetMaxEnv); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil {
			b.Fatalf("$%s=%q: want the largest N to run, such as 10000", fleetMaxEnv, v)
		}
	}
	if n > limit {
		b.Skipf("N=%d: set %s=%d to run it", n, fleetMaxEnv, n)
	}
}

// fleetFigures are one size's measurements; a zero rss was not measured.
type fleetFigures struct {
	first, noop, merge, render, propose time.Duration
	rssMB                               float64
	// mergeOthers is how many other clusters the merge pass opened,
	// updated or closed pull requests of.
	mergeOthers int
}

// BenchmarkFleet times, at each N: the first pass (opening a pull
// request per planned cluster), a no-op pass right after in the same
// loop, the pass publishing a cluster's next step after a person merged
// its step and the live state shows it done, a cold plan and render of
// the fleet, and the peak RSS of a cairn propose process.
func BenchmarkFleet(b *testing.B) {
	bin := &cairnBinary{dir: b.TempDir()}
	figures := map[int]fleetFigures{}
	for _, n := range fleetSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			skipAbove(b, n)
			f := runFleet(b, n, bin)
			figures[n] = f
			b.ReportMetric(f.first.Seconds(), "first-s")
			b.ReportMetric(f.noop.Seconds(), "noop-s")
			b.ReportMetric(f.merge.Seconds(), "merge-s")
			b.ReportMetric(f.render.Seconds(), "render-s")
			b.ReportMetric(float64(f.mergeOthers), "merge-others")
			if f.rssMB > 0 {
				b.ReportMetric(f.rssMB, "rss-MB")
				b.ReportMetric(f.propose.Seconds(), "propose-s")
			}
		})
	}
	reportGrowth(b, figures)
}

func runFleet(b *testing.B, n int, bin *cairnBinary) fleetFigures {
	fl := fleet.New(n, fleetSeed)
	fits := fleetLimits(b, fl)
	r := newFleetRepo(b, fl)
	var f fleetFigures
	rec := r.reconciler(b, githubOptions{})
	first := r.timedPass(b, rec, "first", &f.first)
	if got := countActions(first, publish.ActionOpened); got != fl.Planned() {
		b.Fatalf("first pass opened %d pull requests, want one for each of the %d planned clusters", got, fl.Planned())
	}
	if changed := changedBy(r.timedPass(b, rec, "noop", &f.noop)); len(changed) > 0 {
		b.Fatalf("the no-op pass changed %d clusters: %v", len(changed), changed[:min(len(changed), 5)])
	}
	target, step := r.mergeOne(b, first, func(branch string) {
		if _, err := fleet.Merge(r.bare, branch); err != nil {
			b.Fatal(err)
		}
	})
	out := r.timedPass(b, rec, "merge", &f.merge)
	f.mergeOthers = r.checkNext(b, out, target, step)
	var rendered int
	if f.render, rendered = coldRender(b, fl); rendered != fl.Planned() {
		b.Fatalf("rendered %d clusters, want the %d planned", rendered, fl.Planned())
	}
	if fits {
		f.rssMB, f.propose = bin.propose(b, r)
	} else {
		b.Logf("N=%d: no rss-MB: cairn propose refuses a repo or live state this large (spec.RepoLimits, live.Limits)", n)
	}
	b.Logf("N=%d: %d planned; first %s, no-op %s, merge -> next PR %s (%d others touched), cold render %s, propose %s at %.0f MB",
		n, fl.Planned(), f.first.Round(time.Millisecond), f.noop.Round(time.Millisecond), f.merge.Round(time.Millisecond), f.mergeOthers,
		f.render.Round(time.Millisecond), f.propose.Round(time.Millisecond), f.rssMB)
	return f
}

// fleetLimits raises the spec and live-state limits for this benchmark
// when the fleet is past them, and reports whether the fleet fits the
// limits cairn ships with (so that the cairn binary takes it).
func fleetLimits(b *testing.B, fl *fleet.Fleet) bool {
	files, liveBytes, specBytes := fl.Files(), len(fl.Live()), 0
	for _, c := range files {
		specBytes += len(c)
	}
	rl, ll := spec.RepoLimits, live.Limits
	fits := len(files) <= rl.MaxFiles && len(files) <= rl.MaxDocuments && 2*len(files) <= rl.MaxEntries &&
		int64(specBytes) <= int64(rl.MaxBytes) && int64(liveBytes) <= int64(ll.MaxBytes)
	if fits {
		return true
	}
	spec.RepoLimits.MaxFiles = max(rl.MaxFiles, len(files))
	spec.RepoLimits.MaxDocuments = max(rl.MaxDocuments, len(files))
	spec.RepoLimits.MaxEntries = max(rl.MaxEntries, 2*len(files))
	spec.RepoLimits.MaxBytes = max(rl.MaxBytes, 2*specBytes)
	live.Limits.MaxBytes = max(ll.MaxBytes, 2*liveBytes)
	b.Cleanup(func() { spec.RepoLimits, live.Limits = rl, ll })
	return false
}

// fleetRepo is a fleet's GitOps repo on a real git server over HTTP (a
// token, as a GitHub App's), and its live state in a file.
type fleetRepo struct {
	fl                         *fleet.Fleet
	bare, url, token, liveFile string
}

func newFleetRepo(b *testing.B, fl *fleet.Fleet) *fleetRepo {
	// gitkit logs every request with the standard logger.
	w := log.Writer()
	log.SetOutput(io.Discard)
	b.Cleanup(func() { log.SetOutput(w) })
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(srv.Root()) })
	srv.Auth("x-access-token", "git-t0ken")
	if err := srv.StartHTTP(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.StopHTTP)
	r := &fleetRepo{fl: fl, bare: filepath.Join(srv.Root(), "org", "gitops.git"), url: srv.HTTPAddress() + "/org/gitops.git"}
	if _, err := fleet.WriteBare(r.bare, fl.Files()); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	r.token, r.liveFile = filepath.Join(dir, "git-token"), filepath.Join(dir, "live.yaml")
	writeFleetFile(b, r.token, []byte("git-t0ken\n"))
	writeFleetFile(b, r.liveFile, fl.Live())
	return r
}

func writeFleetFile(b *testing.B, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

func (r *fleetRepo) remote() remoteOptions {
	return remoteOptions{repo: r.url, base: "main", tokenFile: r.token}
}

// reconciler is cairn reconcile's loop over the repo (newReconcilerWith),
// its pull requests local, or on GitHub as gh says.
func (r *fleetRepo) reconciler(b *testing.B, gh githubOptions) *reconciler {
	start := time.Now()
	rec, cleanup, err := newReconcilerWith(context.Background(), r.remote(), gh, liveSource{file: r.liveFile}, specsFlag{dir: "clusters"},
		renderer.Options{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cleanup)
	b.Logf("N=%d: cloned in %s", len(r.fl.Clusters), time.Since(start).Round(time.Millisecond))
	return rec
}

// timedPass runs a pass of rec, its time in d; no cluster may fail.
// With $CAIRN_BENCH_FLEET_CPUPROFILE set to a folder, the pass's CPU
// profile is written there as <name>-<N>.pprof.
func (r *fleetRepo) timedPass(b *testing.B, rec *reconciler, name string, d *time.Duration) []publish.Outcome {
	defer profilePass(b, fmt.Sprintf("%s-%d", name, len(r.fl.Clusters)))()
	start := time.Now()
	out, err := rec.pass(context.Background())
	*d = time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if len(out) != len(r.fl.Clusters) {
		b.Fatalf("%d outcomes for %d clusters", len(out), len(r.fl.Clusters))
	}
	for _, o := range out {
		if o.Action == publish.ActionFailed {
			b.Fatalf("%s failed: %s", o.Cluster, o.Note)
		}
	}
	return out
}

// mergeOne has merge merge the step branch of the first etcd cluster
// scaling out, as a person would, and the live state then show the step
// done; it returns the cluster and the merged step.
func (r *fleetRepo) mergeOne(b *testing.B, first []publish.Outcome, merge func(branch string)) (fleet.Cluster, string) {
	c, ok := r.fl.First(fleet.Etcd, fleet.ScaleOut)
	if !ok {
		b.Fatal("no etcd cluster scales out")
	}
	o := fleetOutcome(b, first, c.String())
	merge(o.Branch)
	if err := r.fl.Advance(c.Name); err != nil {
		b.Fatal(err)
	}
	writeFleetFile(b, r.liveFile, r.fl.Live())
	return c, o.Step
}

// checkNext checks that the pass after the merge opened c's next step,
// and returns how many other clusters it changed.
func (r *fleetRepo) checkNext(b *testing.B, out []publish.Outcome, c fleet.Cluster, merged string) int {
	if o := fleetOutcome(b, out, c.String()); o.Action != publish.ActionOpened || o.Step == merged {
		b.Fatalf("after merging %s: %+v, want the next step's pull request opened", merged, o)
	}
	return len(changedBy(out)) - 1
}

// fleetProfileEnv names a folder for each pass's CPU profile.
const fleetProfileEnv = "CAIRN_BENCH_FLEET_CPUPROFILE"

// profilePass starts the CPU profile of a pass when $CAIRN_BENCH_FLEET_CPUPROFILE
// is set, and returns what stops it.
func profilePass(b *testing.B, name string) func() {
	dir := os.Getenv(fleetProfileEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Logf("no profile of %s: %v (-cpuprofile profiles the whole run)", name, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func fleetOutcome(b *testing.B, out []publish.Outcome, cluster string) publish.Outcome {
	for _, o := range out {
		if o.Cluster == cluster {
			return o
		}
	}
	b.Fatalf("no outcome for %s", cluster)
	return publish.Outcome{}
}

func countActions(out []publish.Outcome, a publish.Action) int {
	n := 0
	for _, o := range out {
		if o.Action == a {
			n++
		}
	}
	return n
}

// changedBy is the clusters whose pull requests a pass opened, updated,
// merged or closed.
func changedBy(out []publish.Outcome) []string {
	var changed []string
	for _, o := range out {
		switch {
		case o.Action == publish.ActionOpened, o.Action == publish.ActionUpdated, o.Action == publish.ActionAutoMerged, len(o.Closed) > 0:
			changed = append(changed, o.Cluster+" "+string(o.Action))
		}
	}
	return changed
}

// BenchmarkColdRender times only the cold render of BenchmarkFleet
// (coldRender) at each N, without the git server and the passes before
// it:
//
//	go test ./cmd/cairn -run '^$' -bench '^BenchmarkColdRender$' -benchtime 1x
func BenchmarkColdRender(b *testing.B) {
	for _, n := range fleetSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			skipAbove(b, n)
			fl := fleet.New(n, fleetSeed)
			fleetLimits(b, fl)
			var d time.Duration
			rendered := 0
			for b.Loop() {
				d, rendered = coldRender(b, fl)
			}
			b.ReportMetric(d.Seconds(), "render-s")
			b.ReportMetric(float64(rendered), "clusters")
		})
	}
}

// coldRender loads, plans and renders (with its builds) each planned
// cluster's first step, as a pass does (publish.Ahead, one worker per
// core), with a fresh renderer and the loop's own Plan and Render
// (loopConfig): the cost of a pass with nothing cached. It returns the time and how many clusters it rendered.
func coldRender(b *testing.B, fl *fleet.Fleet) (time.Duration, int) {
	dir := b.TempDir()
	for p, c := range fl.Files() {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		writeFleetFile(b, full, []byte(c))
	}
	// What ran before the merge: the same fleet, drawn again.
	liveFile := filepath.Join(b.TempDir(), "live.yaml")
	writeFleetFile(b, liveFile, fleet.New(len(fl.Clusters), fleetSeed).Live())
	defer profilePass(b, fmt.Sprintf("render-%d", len(fl.Clusters)))()
	defer keepGC()()
	defer tuneGC()() // as cairn's main does
	start := time.Now()
	rend, err := newRenderer(renderer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := loopConfig(nil, nil, rend, liveSource{file: liveFile}, specsFlag{dir: "clusters"}, slog.New(slog.DiscardHandler))
	clusters, err := spec.LoadRepo(dir, cfg.Layout)
	if err != nil {
		b.Fatal(err)
	}
	observed, err := cfg.Observe(context.Background(), clusters)
	if err != nil {
		b.Fatal(err)
	}
	pols, err := cfg.Policies(dir)
	if err != nil {
		b.Fatal(err)
	}
	plans := cfg.Plan(clusters, observed, pols)
	planned := time.Since(start)
	byRef := make(map[string]spec.Cluster, len(clusters))
	for _, c := range clusters {
		byRef[c.Ref().String()] = c
	}
	// Rendered as a pass renders them: on every core, consumed in order.
	rendered := 0
	ahead := publish.NewAhead(context.Background(), len(plans.Plans), 0, func(i int) bool { return plans.Plans[i].Status == plan.StatusPlanned },
		func(i int) (renderer.Tree, renderer.Built, error) {
			p := plans.Plans[i]
			return cfg.Render(byRef[p.Cluster.String()], p, p.Steps[0].ID)
		})
	defer ahead.Close()
	for i, p := range plans.Plans {
		_, _, err, ok := ahead.Get(i)
		if !ok {
			continue
		}
		if err != nil {
			b.Fatalf("render %s: %v", p.Cluster, err)
		}
		rendered++
	}
	d := time.Since(start)
	b.Logf("N=%d: cold render of %d clusters %s, of which load and plan %s", len(fl.Clusters), rendered, d.Round(time.Millisecond), planned.Round(time.Millisecond))
	return d, rendered
}

// keepGC returns what puts the collector's settings back as they are now.
func keepGC() func() {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1) // a negative limit only reads it
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// cairnBinary is cairn's binary, built once into dir when first needed.
type cairnBinary struct {
	dir  string
	once sync.Once
	path string
	err  error
}

// propose runs cairn propose over the repo as a process of its own: a
// clone and a pass, every step's pull request already open. It returns
// the process's peak resident memory (getrusage's ru_maxrss) and its wall
// time.
func (c *cairnBinary) propose(b *testing.B, r *fleetRepo) (float64, time.Duration) {
	c.once.Do(func() {
		c.path = filepath.Join(c.dir, "cairn")
		if out, err := exec.Command("go", "build", "-o", c.path, ".").CombinedOutput(); err != nil {
			c.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if c.err != nil {
		b.Fatal(c.err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(c.path, "propose", "--repo", r.url, "--token-file", r.token, "--live", r.liveFile)
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("cairn propose: %v\n%s", err, stderr.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no rusage for the cairn process")
	}
	return float64(ru.Maxrss) / 1024, d // ru_maxrss is in KiB on Linux
}

// logFleetTable logs the figures of every size that ran.
func logFleetTable(b *testing.B, figures map[int]fleetFigures) {
	var t strings.Builder
	fmt.Fprintf(&t, "\n%8s %10s %10s %10s %10s %10s %8s\n", "N", "first", "no-op", "merge", "render", "propose", "rss")
	for _, n := range slices.Sorted(maps.Keys(figures)) {
		f := figures[n]
		fmt.Fprintf(&t, "%8d %9.2fs %9.2fs %9.2fs %9.2fs %9.2fs %6.0fMB\n", n, f.first.Seconds(), f.noop.Seconds(), f.merge.Seconds(),
			f.render.Seconds(), f.propose.Seconds(), f.rssMB)
	}
	b.Log(t.String())
}

// reportGrowth reports, when two sizes or more ran, how each figure grew
// from the smallest to the largest, per cluster: the ratio of the figures
// divided by the ratio of the sizes. 1 is linear, below 1 better. It logs
// the table of every size's figures with them.
func reportGrowth(b *testing.B, figures map[int]fleetFigures) {
	sizes := slices.Sorted(maps.Keys(figures))
	if len(sizes) < 2 {
		return
	}
	lo, hi := sizes[0], sizes[len(sizes)-1]
	b.Run(fmt.Sprintf("growth-%d-to-%d", lo, hi), func(b *testing.B) {
		logFleetTable(b, figures)
		fl, fh, k := figures[lo], figures[hi], float64(hi)/float64(lo)
		grow := func(a, z time.Duration) float64 { return z.Seconds() / a.Seconds() / k }
		b.ReportMetric(grow(fl.first, fh.first), "first-x")
		b.ReportMetric(grow(fl.noop, fh.noop), "noop-x")
		b.ReportMetric(grow(fl.merge, fh.merge), "merge-x")
		b.ReportMetric(grow(fl.render, fh.render), "render-x")
		if fl.rssMB > 0 && fh.rssMB > 0 {
			b.ReportMetric(fh.rssMB/fl.rssMB/k, "rss-x")
		}
		b.Logf("per-cluster growth from N=%d to N=%d (1 = linear): first %.2f, no-op %.2f, merge %.2f, render %.2f",
			lo, hi, grow(fl.first, fh.first), grow(fl.noop, fh.noop), grow(fl.merge, fh.merge), grow(fl.render, fh.render))
	})
}

// BenchmarkFleetGitHub runs the same passes with the pull requests on
// the GitHub test server and reports the API calls of each, as they go
// over the wire: reads (GETs), those answered 304 Not Modified, and
// writes.
//
// A first pass at N = 1,000 writes more than cairn's hourly budget of
// GitHub writes (500) lets one hour make: cairn makes the rest in later
// passes, hours later. So the first pass is made by the same loop with
// that budget off (first-*), and the other passes by cairn reconcile's
// loop (newReconcilerWith) started afresh over the open pull requests:
// its first pass (restart-*), the pass after (noop1-*, which reads what
// the writes changed), the next (noop-*) and the pass after a person
// merged one pull request (merge-*).
func BenchmarkFleetGitHub(b *testing.B) {
	for _, n := range fleetSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			skipAbove(b, n)
			fl := fleet.New(n, fleetSeed)
			fleetLimits(b, fl)
			r := newFleetRepo(b, fl)
			gh := githubtest.New(b)
			gh.UseRepo(r.bare)
			api := newAPICounter(b, gh.URL)
			ghToken := filepath.Join(b.TempDir(), "gh-token")
			writeFleetFile(b, ghToken, []byte(gh.Token+"\n"))
			opts := githubOptions{repo: "org/gitops", api: api.url + "/", tokenFile: ghToken}
			var d time.Duration
			first := r.timedPass(b, r.unbudgeted(b, opts), "github-first", &d)
			api.report(b, "first", d)
			if open := len(gh.Open()); open != fl.Planned() {
				b.Fatalf("%d pull requests open after the first pass, want %d", open, fl.Planned())
			}
			rec := r.reconciler(b, opts)
			for _, pass := range []string{"restart", "noop1", "noop"} {
				if changed := changedBy(r.timedPass(b, rec, "github-"+pass, &d)); len(changed) > 0 {
					b.Fatalf("the %s pass changed %d clusters: %v", pass, len(changed), changed[:min(len(changed), 5)])
				}
				api.report(b, pass, d)
			}
			target, step := r.mergeOne(b, first, func(branch string) { mergeOnGitHub(b, gh, branch) })
			r.checkNext(b, r.timedPass(b, rec, "github-merge", &d), target, step)
			api.report(b, "merge", d)
		})
	}
}

// unbudgeted is cairn reconcile's loop with the pull requests on GitHub
// (newReconcilerWith), but for the provider's hourly budget of writes,
// which is off.
func (r *fleetRepo) unbudgeted(b *testing.B, gh githubOptions) *reconciler {
	ctx, log := context.Background(), slog.New(slog.DiscardHandler)
	rend, err := newRenderer(renderer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	remote := r.remote()
	repo, cleanup, err := remote.clone(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cleanup)
	token, err := gitrepo.ReadToken(gh.tokenFile, "GITHUB_TOKEN")
	if err != nil {
		b.Fatal(err)
	}
	owner, name, _ := strings.Cut(gh.repo, "/")
	prs, err := githubpr.New(owner, name, "main", githubpr.Options{BaseURL: gh.api, Token: token, WritesPerHour: -1, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	cfg := loopConfig(repo, prs, rend, liveSource{file: r.liveFile}, specsFlag{dir: "clusters"}, log)
	cfg.Hold, cfg.AutoMerge = true, !gh.noAutoMerge
	return &reconciler{Loop: reconcile.New(cfg)}
}

// apiCounter is a proxy in front of the GitHub test server that counts
// the calls going through it.
type apiCounter struct {
	url                        string
	mu                         sync.Mutex
	reads, notModified, writes int
	// written are the writes by call, with the numbers in their paths
	// folded ("POST /repos/o/r/issues/N/comments"), when a pass makes few.
	written map[string]int
}

func newAPICounter(b *testing.B, target string) *apiCounter {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	c := &apiCounter{}
	// The proxy keeps the Host header, so the Link headers of pages
	// point at it too.
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(resp *http.Response) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case resp.Request.Method != http.MethodGet:
			c.writes++
			if c.written == nil {
				c.written = map[string]int{}
			}
			c.written[resp.Request.Method+" "+numbers.ReplaceAllString(resp.Request.URL.Path, "/N")]++
		case resp.StatusCode == http.StatusNotModified:
			c.reads++
			c.notModified++
		default:
			c.reads++
		}
		return nil
	}
	srv := httptest.NewServer(p)
	b.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// report reports the calls since the last report as the pass's, and
// starts counting again.
func (c *apiCounter) report(b *testing.B, pass string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.ReportMetric(float64(c.reads), pass+"-reads")
	b.ReportMetric(float64(c.notModified), pass+"-304")
	b.ReportMetric(float64(c.writes), pass+"-writes")
	b.Logf("%-6s pass: %6d reads (%d answered 304), %6d writes, in %s", pass, c.reads, c.notModified, c.writes, d.Round(time.Millisecond))
	if c.writes > 0 && c.writes <= 20 {
		b.Logf("%-6s pass writes: %v", pass, c.written)
	}
	c.reads, c.notModified, c.writes, c.written = 0, 0, 0, nil
}

// numbers are the numbers in an API path (pull requests, comments).
var numbers = regexp.MustCompile(`/[0-9]+`)

// mergeOnGitHub merges the pull request of branch through the API, as a
// person would.
func mergeOnGitHub(b *testing.B, gh *githubtest.Server, branch string) {
	var pr *githubtest.PR
	for _, p := range gh.Open() {
		if p.Head.Ref == branch {
			pr = p
		}
	}
	if pr == nil {
		b.Fatalf("no open pull request of %s", branch)
	}
	body, _ := json.Marshal(map[string]string{"sha": gh.HeadSHA(branch), "merge_method": "merge"})
	req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/repos/org/gitops/pulls/%d/merge", gh.URL, pr.Number), bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gh.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("merge %s: %s", branch, resp.Status)
	}
}
