package monitoring

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the module's root, from this package's folder.
const repoRoot = "../.."

var metricLiteral = regexp.MustCompile(`^cairn_[a-z0-9_]+$`)

// registered are the metric names cairn's Go sources register: the fully
// qualified name of every prometheus *Opts literal (Namespace, Subsystem,
// Name) and every string literal that is a whole cairn_ name (a
// prometheus.NewDesc, a table of names). Histograms and summaries add
// the series they expose. Test files do not count.
var registered = sync.OnceValues(func() (map[string]bool, error) {
	names := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != repoRoot && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				addOpts(names, n)
			case *ast.BasicLit:
				if s, ok := stringLit(n); ok && metricLiteral.MatchString(s) {
					names[s] = true
				}
			}
			return true
		})
		return nil
	})
	return names, err
})

// addOpts adds the name a prometheus.*Opts literal registers.
func addOpts(names map[string]bool, lit *ast.CompositeLit) {
	parts := map[string]string{}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok || (key.Name != "Namespace" && key.Name != "Subsystem" && key.Name != "Name") {
			continue
		}
		if v, ok := kv.Value.(*ast.BasicLit); ok {
			if s, ok := stringLit(v); ok {
				parts[key.Name] = s
			}
		}
	}
	if parts["Name"] == "" {
		return
	}
	var fq []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			fq = append(fq, parts[k])
		}
	}
	name := strings.Join(fq, "_")
	if !strings.HasPrefix(name, "cairn_") {
		return
	}
	names[name] = true
	typ := ""
	if sel, ok := lit.Type.(*ast.SelectorExpr); ok {
		typ = sel.Sel.Name
	}
	switch typ {
	case "HistogramOpts":
		names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
	case "SummaryOpts":
		names[name+"_sum"], names[name+"_count"] = true, true
	}
}

func stringLit(l *ast.BasicLit) (string, bool) {
	if l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

// registeredNames returns the metric names the code registers, failing
// the test when the sources cannot be read.
func registeredNames(t *testing.T) map[string]bool {
	t.Helper()
	names, err := registered()
	if err != nil {
		t.Fatalf("read cairn's Go sources: %v", err)
	}
	return names
}

// unregistered returns the metric names expr reads that the code does not
// register.
func unregistered(known map[string]bool, expr string) []string {
	var out []string
	for _, m := range metricNames(expr) {
		if !known[m] && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// PromQL words that are not metric names. labelLists are followed by a
// parenthesised list of label names.
var (
	promqlWords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
		"inf": true, "nan": true, "start": true, "end": true,
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
		"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
		"limitk": true, "limit_ratio": true,
	}
	labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// metricNames returns the metric names a PromQL expression (or a Grafana
// query with $variables) selects: identifiers outside strings, label
// matchers, ranges and label lists that are neither keywords nor
// function calls. It is a lexer, not a parser: the queries' syntax is
// promtool's to check.
func metricNames(expr string) []string {
	var out []string
	labelList := false
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			i = skipTo(expr, i, '}')
		case c == '[':
			i = skipTo(expr, i, ']')
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skipTo(expr, i, '}')
			} else {
				for i < len(expr) && isIdent(expr[i]) {
					i++
				}
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdent(c):
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == ':') {
				j++
			}
			word := expr[i:j]
			i = j
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			call := k < len(expr) && expr[k] == '('
			switch {
			case labelLists[strings.ToLower(word)]:
				labelList = true
				continue
			case promqlWords[strings.ToLower(word)], call:
			default:
				out = append(out, word)
			}
		case c == '(' && labelList:
			i = skipTo(expr, i, ')')
		case c == ' ' || c == '\t' || c == '\n':
			i++
			continue
		default:
			i++
		}
		labelList = false
	}
	return out
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skipString returns the index after the string literal at i.
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return i
}

// skipTo returns the index after the close that ends the group opened at
// i, skipping strings and nested groups.
func skipTo(s string, i int, close byte) int {
	open, depth := s[i], 0
	for i < len(s) {
		switch s[i] {
		case '"', '\'', '`':
			i = skipString(s, i)
			continue
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return i
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`cairn_etcd_quorum == 0`, []string{"cairn_etcd_quorum"}},
		{`sum by (namespace, cluster) (increase(cairn_postgres_failovers_total{cluster=~"$cluster"}[$__rate_interval])) > 0`, []string{"cairn_postgres_failovers_total"}},
		{`max(x{a="}"} and on (instance) (cairn_runtime_leader == 1)) by (cluster)`, []string{"x", "cairn_runtime_leader"}},
		{`histogram_quantile(0.95, sum by (le) (rate(cairn_reconcile_pass_duration_seconds_bucket[5m])))`, []string{"cairn_reconcile_pass_duration_seconds_bucket"}},
		{`a * on (x) group_left (kind) b offset 1h`, []string{"a", "b"}},
		{`a * on (x) group_left b`, []string{"a", "b"}},
		{`time() - a > 26 * 3600 unless count without (pod) (b) or vector(0)`, []string{"a", "b"}},
		{`count(cairn_runtime_leader{namespace=~"$namespace"} == bool 1)`, []string{"cairn_runtime_leader"}},
		{`topk(5, x:recorded:rate5m) # a comment naming y`, []string{"x:recorded:rate5m"}},
		{`${datasource} 'it''s' "a \" b" c`, []string{"c"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// TestRegisteredNamesAreFound keeps the source scan honest: the families
// the runtime has registered from the start are found.
func TestRegisteredNamesAreFound(t *testing.T) {
	known := registeredNames(t)
	for _, m := range []string{"cairn_etcd_quorum", "cairn_postgres_failovers_total", "cairn_backup_last_success_timestamp_seconds"} {
		if !known[m] {
			t.Errorf("%s is registered in runtime/agent but the scan did not find it", m)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "go.mod")); err != nil {
		t.Fatalf("the module root is not %s: %v", repoRoot, err)
	}
}
