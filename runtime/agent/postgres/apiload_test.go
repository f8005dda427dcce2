package postgres

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// apiCount is one kind of request one client sent: who sent it (a
// member's or a runtime replica's name), the verb (get, list, watch,
// create, update, patch, delete) and the resource.
type apiCount struct {
	who, verb, resource string
}

// apiCounter counts the requests each client sends the API server: each
// client it makes (client) wraps its transport, so members and runtime
// replicas are told apart without reading the server's metrics. A watch
// counts once, when it is opened; the events it carries are not
// requests.
type apiCounter struct {
	cfg *rest.Config
	mu  sync.Mutex
	n   map[apiCount]int
}

func newAPICounter(cp *testbed.ControlPlane) *apiCounter {
	return &apiCounter{cfg: cp.Config(), n: map[apiCount]int{}}
}

// client is a clientset whose requests are counted under who.
func (c *apiCounter) client(t testing.TB, who string) kubernetes.Interface {
	cfg := rest.CopyConfig(c.cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			verb, resource := classifyRequest(req)
			c.mu.Lock()
			c.n[apiCount{who, verb, resource}]++
			c.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// take returns the counts since the last take and starts again.
func (c *apiCounter) take() map[apiCount]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[apiCount]int{}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// classifyRequest names a request's verb and resource from its method and path
// (/api/v1/namespaces/NS/RESOURCE[/NAME] or /apis/GROUP/VERSION/...).
func classifyRequest(req *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	rest := parts
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	named := len(rest) >= 2
	if len(rest) > 0 {
		resource = rest[0]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, resource
}

// apiSource is where a request comes from, as the budget counts them.
func apiSource(k apiCount) string {
	switch {
	case strings.HasPrefix(k.who, "pg-"):
		return "confirm" // every request a member sends is its role's confirmation
	case k.resource == "leases":
		return "leader-election"
	case k.resource == "events":
		return "events"
	case k.verb == "get" || k.verb == "list" || k.verb == "watch":
		return "runtime-reads"
	}
	return "runtime-writes"
}

// apiLoadWindow is how long each of the benchmark's rounds counts.
const apiLoadWindow = time.Minute

// BenchmarkAPILoad counts the API requests of one quiet, healthy
// PostgreSQL cluster (three members, two runtime replicas, the runtime's
// and the members' default timings) over b.N rounds of a minute each,
// and reports them per second by source: the members' role
// confirmations; the runtime's reads (its passes, and its backup
// schedule's checks); its writes (status, labels); its Events; its
// leader election. fleet-req/s is the total for 1,000 such clusters.
//
//	go test ./runtime/agent -run '^$' -bench APILoad -benchtime 1x
func BenchmarkAPILoad(b *testing.B) {
	cp := testbed.Start(b)
	counter := newAPICounter(cp)
	ns := cp.Namespace(b, "pgload")
	pc := newPgCluster(b, cp, ns, 3, 0)
	pc.interval = 0 // the runtime's default, 500ms
	pc.client = func(who string) kubernetes.Interface { return counter.client(b, who) }
	// The rendered config every cluster has: the runtime's passes and
	// its backup schedule read it.
	_, err := pc.c.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")},
		Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pc.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range []string{"runtime-a", "runtime-b"} {
		pc.runtime(ctx, id, FailoverSettings{}, nil)
	}
	pc.waitFor("healthy", pc.healthy)
	// Settle: the first passes label, write the first status and the
	// members' config status.
	time.Sleep(10 * time.Second)
	counter.take()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		time.Sleep(apiLoadWindow)
	}
	took := time.Since(start)
	b.StopTimer()
	if err := pc.healthy(); err != nil {
		b.Fatalf("the cluster was not quiet and healthy throughout: %v", err)
	}
	reportAPILoad(b, counter.take(), took)
}

// reportAPILoad reports counts over took per second, by source and in
// total, and logs them by client, verb and resource.
func reportAPILoad(b *testing.B, counts map[apiCount]int, took time.Duration) {
	bySource := map[string]int{}
	total := 0
	var lines []string
	for _, k := range slices.SortedFunc(maps.Keys(counts), func(x, y apiCount) int {
		return strings.Compare(x.who+" "+x.verb+" "+x.resource, y.who+" "+y.verb+" "+y.resource)
	}) {
		bySource[apiSource(k)] += counts[k]
		total += counts[k]
		lines = append(lines, fmt.Sprintf("%-10s %-7s %-13s %6d  %6.3f/s", k.who, k.verb, k.resource, counts[k], float64(counts[k])/took.Seconds()))
	}
	for _, s := range []string{"confirm", "runtime-reads", "runtime-writes", "events", "leader-election"} {
		b.ReportMetric(float64(bySource[s])/took.Seconds(), s+"-req/s")
	}
	perSec := float64(total) / took.Seconds()
	b.ReportMetric(perSec, "req/s")
	b.ReportMetric(perSec*1000, "fleet-req/s")
	b.Logf("API requests of one cluster over %s (%.2f/s; %.0f/s for 1,000 clusters):\n%s", took.Round(time.Second), perSec, perSec*1000, strings.Join(lines, "\n"))
}
