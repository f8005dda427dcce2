package renderer

import (
	"bytes"
	"math"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/plan"
)

// yamlOutResources are resources whose values take every branch of
// jsonRoundTrip, by whether resourceYAML takes them (fast) or sends them
// the original way.
var yamlOutResources = map[string]struct {
	doc  string
	fast bool
}{
	"plain": {`apiVersion: v1
kind: ConfigMap
metadata: {name: plain, labels: {a: "1", b: "true", c: "null", d: "~", e: "0x10", f: "1e3"}}
data: {html: "<a href=\"x\">&amp;</a>", tab: "a\tb", lines: "a\nb\r\nc", ls: "a\u2028b\u2029c", nbsp: "a\u00a0b", cjk: "日本", pua: "\ue000", quote: "'\"", empty: "", ctl: "\x01\x1f"}
`, true},
	"integers": {`apiVersion: example.com/v1
kind: Thing
metadata: {name: integers}
spec: {zero: 0, neg: -3, big: 9007199254740993, max: 9223372036854775807, integral: 3.0, negzero: -0.0, nothing: null, yes: true, no: false}
`, true},
	"shapes": {`apiVersion: example.com/v1
kind: Thing
metadata: {name: shapes}
spec:
  emptyList: []
  emptyMap: {}
  nested: [[1, 2], {a: b}, [], {}, null]
  "01": leading zero key
  "10": ten
  "9": nine
  "true": key true
`, true},
	"styles": {`apiVersion: v1
kind: ConfigMap
metadata: {name: styles, annotations: {n: "123", b: "yes", o: "on", t: !!str 12, s: 'it''s'}}
data:
  literal: |
    line one
      indented
    last
  spaces: "  lead and trail  "
  folded: >
    folded
    text
  keep: |+
    keep

  strip: |-
    strip
  plainmulti: a
    b
  "quoted key": v
`, true},
	"anchor": {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: anchor}\nspec: {a: &x {k: v}, b: *x}\n", true},
	"float":  {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: float}\nspec: {f: 1.5}\n", false},
	"exp":    {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: exp}\nspec: {f: 1e21}\n", false},
	"uint":   {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: uint}\nspec: {u: 18446744073709551615}\n", false},
	"nel":    {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nel}\ndata: {a: \"x\\Ny\"}\n", false},
	"del":    {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: del}\ndata: {a: \"x\\x7fy\"}\n", false},
	"c1":     {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\ndata: {a: \"x\\x9by\"}\n", false},
	"bom":    {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bom}\ndata: {a: \"x\\ufeffy\"}\n", false},
	"astral": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: astral}\ndata: {a: \"x\\U0001F600y\"}\n", false},
	"fffd":   {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fffd}\ndata: {a: \"x\\ufffdy\"}\n", false},
	"merge":  {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: merge}\nspec: {\"<<\": {a: b}, c: d}\n", true}, // merged when decoded
	"time":   {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: time}\nspec: {at: 2001-12-14t21:59:43.10-05:00, day: 2002-12-14}\n", false},
	"binary": {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: binary}\nspec: {b: !!binary aGVsbG8=}\n", true}, // decoded to a string
	"intKey": {"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: intkey}\nspec: {m: {1: one, 2: two}}\n", false},
}

func buildResources(t *testing.T, docs ...string) resmap.ResMap {
	t.Helper()
	tree := Tree{"x/kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: ns\nresources: [r.yaml]\n")}
	var all []byte
	for i, d := range docs {
		if i > 0 {
			all = append(all, "---\n"...)
		}
		all = append(all, d...)
	}
	tree["x/r.yaml"] = all
	mem, err := memFS(tree)
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/x")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// resourcesYAML writes what kustomize's AsYaml writes, byte for byte:
// for each resource alone, for all of them at once, and for every build
// of rendered trees.
func TestYAMLOutIsKustomizes(t *testing.T) {
	var all []string
	for name, rc := range yamlOutResources {
		all = append(all, rc.doc)
		t.Run(name, func(t *testing.T) {
			m := buildResources(t, rc.doc)
			if _, fast := resourceYAML(m.Resources()[0]); fast != rc.fast {
				t.Errorf("taken by resourceYAML: %v, want %v", fast, rc.fast)
			}
			sameYAMLOut(t, m)
		})
	}
	t.Run("all", func(t *testing.T) { sameYAMLOut(t, buildResources(t, all...)) })
	t.Run("rendered", func(t *testing.T) {
		desired, plans, r := cacheFixture(t, 4)
		for i, c := range desired {
			p := plans.Plans[i]
			tree, _, err := r.Render(c, p, p.Steps[len(p.Steps)-1].ID)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := memFS(tree)
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range renderedDirs(tree, p) {
				m, err := run(mem, dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, res := range m.Resources() {
					if _, fast := resourceYAML(res); !fast {
						t.Errorf("%s: %s is not taken by resourceYAML", dir, res.CurId())
					}
				}
				sameYAMLOut(t, m)
			}
		}
	})
}

func sameYAMLOut(t *testing.T, m resmap.ResMap) {
	t.Helper()
	want, wantErr := m.AsYaml()
	got, err := resourcesYAML(m)
	if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Errorf("resourcesYAML:\n%s(err %v)\nkustomize's AsYaml:\n%s(err %v)", got, err, want, wantErr)
	}
}

// renderedDirs are the folders of a tree rendered for p: the entry
// point, the base, each step.
func renderedDirs(tree Tree, p plan.Plan) []string {
	root := Root(p.Cluster.Name)
	dirs := []string{root}
	if _, ok := tree[root+"/base/kustomization.yaml"]; ok {
		dirs = append(dirs, root+"/base")
	}
	for _, s := range p.Steps {
		dirs = append(dirs, root+"/"+StepDir(s.ID))
	}
	return dirs
}

// marshalYAMLData writes what sigs.k8s.io/yaml.Marshal writes, byte for
// byte, for values of every kind the renderer marshals and for values
// it sends the original way.
func TestMarshalIsSigsYAMLs(t *testing.T) {
	values := map[string]any{
		"numbers": map[string]any{"int": 3.0, "neg": -7.0, "negzero": math.Copysign(0, -1), "frac": 1.5, "big": float64(1 << 53), "below": float64(1<<53 - 1),
			"huge": 1e21, "tiny": 1e-7, "typed": 4, "int64": int64(5)},
		"strings": map[string]any{"html": "<&>", "num": "123", "bool": "true", "null": "null", "nel": "a\u0085b", "del": "a\x7fb", "bom": "\ufeff",
			"astral": "\U0001F600", "invalid": "a\xffb", "ls": "\u2028", "ctl": "\x01\x1f", "empty": ""},
		"shapes": map[string]any{"nilList": []any(nil), "nilMap": map[string]any(nil), "empty": []any{}, "emptyMap": map[string]any{},
			"nested": []any{[]any{1.0, "a"}, map[string]any{"k": nil}}, "<<": "merge", "10": "ten", "9": "nine"},
		"ops":    []patchOp{{Op: "replace", Path: "/spec/replicas", Value: 4}, {Op: "remove", Path: "/a~1b"}},
		"kust":   kustomization{APIVersion: "v1", Kind: "Kustomization", Resources: []string{"a.yaml"}},
		"scalar": "just a string",
		"nil":    nil,
	}
	desired, plans, r := cacheFixture(t, 2)
	for i, c := range desired {
		tree, _, err := r.Render(c, plans.Plans[i], plans.Plans[i].Steps[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tree.Paths() {
			var v any
			if err := yaml.Unmarshal(tree[p], &v); err != nil {
				continue
			}
			if _, fast := jsonRoundTrip(v); !fast {
				t.Errorf("%s is not taken by jsonRoundTrip", p)
			}
			values[p] = v
		}
	}
	for name, v := range values {
		want, wantErr := yaml.Marshal(v)
		got, err := marshalYAMLData(v)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: marshalYAMLData:\n%s(err %v)\nsigs.k8s.io/yaml.Marshal:\n%s(err %v)", name, got, err, want, wantErr)
		}
	}
}
