package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/testbed"
)

// The dashboard's data source: a variable of type datasource, which every
// query names by uid, so the dashboard imports into any Grafana.
const (
	datasourceVar = "datasource"
	datasourceUID = "${datasource}"
)

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type gridPos struct {
	H, W, X, Y int
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	GridPos    *gridPos    `json:"gridPos"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name       string      `json:"name"`
			BuiltIn    int         `json:"builtIn"`
			Expr       string      `json:"expr"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"annotations"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data := readFile(t, "grafana-dashboard.json")
	if !json.Valid(data) {
		t.Fatal("grafana-dashboard.json is not JSON")
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	return d
}

// query is one PromQL query of the dashboard, named for messages.
type query struct{ where, expr string }

// labelValues matches Grafana's label_values(QUERY, LABEL) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// queries returns every PromQL query of the dashboard, checking as it
// goes that each names the Prometheus data source variable.
func queries(t *testing.T, d dashboard) []query {
	t.Helper()
	isProm := func(ds *datasource) bool { return ds != nil && ds.Type == "prometheus" && ds.UID == datasourceUID }
	var out []query
	hasVar := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			var q string
			if v.Name == datasourceVar && json.Unmarshal(v.Query, &q) == nil && q == "prometheus" {
				hasVar = true
			}
		case "query":
			if !isProm(v.Datasource) {
				t.Errorf("variable %s: datasource %+v, want the %s variable", v.Name, v.Datasource, datasourceVar)
			}
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				var s string
				if err := json.Unmarshal(v.Query, &s); err != nil {
					t.Errorf("variable %s: query %s", v.Name, v.Query)
				}
				q.Query = s
			}
			m := labelValues.FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("variable %s: %q is not label_values(QUERY, LABEL)", v.Name, q.Query)
				continue
			}
			out = append(out, query{"variable " + v.Name, m[1]})
		}
	}
	if !hasVar {
		t.Errorf("no datasource variable %q of type prometheus", datasourceVar)
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 1 {
			continue
		}
		if !isProm(a.Datasource) {
			t.Errorf("annotation %s: datasource %+v, want the %s variable", a.Name, a.Datasource, datasourceVar)
		}
		out = append(out, query{"annotation " + a.Name, a.Expr})
	}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			if !isProm(p.Datasource) {
				t.Errorf("panel %q: datasource %+v, want the %s variable", p.Title, p.Datasource, datasourceVar)
			}
			for _, q := range p.Targets {
				if !isProm(q.Datasource) {
					t.Errorf("panel %q query %s: datasource %+v, want the %s variable", p.Title, q.RefID, q.Datasource, datasourceVar)
				}
				if strings.TrimSpace(q.Expr) == "" {
					t.Errorf("panel %q query %s is empty", p.Title, q.RefID)
				}
				out = append(out, query{fmt.Sprintf("panel %q query %s", p.Title, q.RefID), q.Expr})
			}
		}
	}
	walk(d.Panels)
	return out
}

func TestDashboardStructure(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion 36 or later (data sources by uid)", d.UID, d.Title, d.SchemaVersion)
	}
	ids := map[int]string{}
	var rows []string
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.ID <= 0 {
				t.Errorf("panel %q has no id", p.Title)
			} else if other, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
				t.Errorf("panel %q: gridPos %+v outside Grafana's 24 columns", p.Title, p.GridPos)
			}
			if p.Title == "" {
				t.Errorf("panel %d has no title", p.ID)
			}
			if p.Type == "row" {
				rows = append(rows, p.Title)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	// A row per kind, and the rest of what an operator looks for.
	for _, want := range []string{"Runtime", "PostgreSQL", "etcd", "Backups", "Reconcile"} {
		found := false
		for _, r := range rows {
			found = found || r == want
		}
		if !found {
			t.Errorf("no row %q (rows: %q)", want, rows)
		}
	}
}

func TestDashboardReadsRegisteredMetrics(t *testing.T) {
	known := registeredNames(t)
	for _, q := range queries(t, loadDashboard(t)) {
		if len(metricNames(q.expr)) == 0 {
			t.Errorf("%s reads no metric: %s", q.where, q.expr)
		}
		if bad := unregistered(known, q.expr); len(bad) > 0 {
			t.Errorf("%s reads %q, which cairn does not register", q.where, bad)
		}
	}
}

// grafanaVars are the values the dashboard's variables are given when its
// queries are checked by promtool.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h",
	"$namespace", ".*", "$cluster", ".*",
)

// TestDashboardQueriesParse has promtool parse every query of the
// dashboard (as recording rules), with its variables filled in.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := testbed.Bin(t, "promtool")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries(t, loadDashboard(t)) {
		expr := grafanaVars.Replace(q.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: a variable the test does not fill: %s", q.where, q.expr)
		}
		e, _ := json.Marshal(expr) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      # %s\n      - record: dashboard:query%d\n        expr: %s\n", q.where, i, e)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, b.String())
	}
}
