package reconcile

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
)

// chartDir is charts/cairn from this package's folder; installValues the
// values that set what examples/install's patch sets.
var (
	chartDir      = filepath.Join("..", "..", "charts", "cairn")
	installValues = filepath.Join(chartDir, "ci", "install-values.yaml")
)

// helmTemplate renders charts/cairn as release cairn in namespace ns,
// with the install values and then args (more --set or --values).
func helmTemplate(t *testing.T, ns string, args ...string) ([]byte, error) {
	t.Helper()
	helm := testbed.Bin(t, "helm")
	cmd := exec.Command(helm, append([]string{"template", "cairn", chartDir, "--namespace", ns, "--values", installValues}, args...)...)
	// No user's Helm config or cache: the chart needs none.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %w: %s", err, stderr.Bytes())
	}
	return out, nil
}

// object is one manifest, decoded loosely, and its identity.
type object struct {
	id  string // Kind namespace/name
	obj map[string]any
	doc []byte
}

// objects splits a YAML stream (kustomize's or Helm's: comments and
// "# Source:" lines are left out) into objects by identity.
func objects(t *testing.T, stream []byte) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, doc := range bytes.Split(append([]byte("\n"), stream...), []byte("\n---")) {
		var o map[string]any
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if len(o) == 0 {
			continue
		}
		meta, _ := o["metadata"].(map[string]any)
		id := fmt.Sprintf("%v %v/%v", o["kind"], meta["namespace"], meta["name"])
		id = strings.ReplaceAll(id, "<nil>", "")
		if _, dup := out[id]; dup {
			t.Fatalf("%s twice", id)
		}
		out[id] = object{id: id, obj: o, doc: doc}
	}
	return out
}

// withoutLabels returns o without its labels, nor those of its pod
// template, and those labels.
func withoutLabels(o map[string]any) (rest map[string]any, labels []map[string]any) {
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			c := map[string]any{}
			for k, x := range v {
				if k == "metadata" {
					if m, ok := x.(map[string]any); ok {
						m = maps.Clone(m)
						if l, ok := m["labels"].(map[string]any); ok {
							labels = append(labels, l)
						}
						delete(m, "labels")
						x = m
					}
				}
				c[k] = walk(x)
			}
			return c
		case []any:
			c := make([]any, len(v))
			for i, x := range v {
				c[i] = walk(x)
			}
			return c
		}
		return v
	}
	return walk(o).(map[string]any), labels
}

// installExample is `kustomize build examples/install` as it ships.
func installExample(t *testing.T) []byte {
	t.Helper()
	stream, err := renderer.Build(installTree(t, "", "", ""), "examples/install")
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// The chart with examples/install's values renders the objects of
// `kustomize build examples/install`, field for field (the Deployment's
// pod spec and args, the Roles' rules, the bindings, the Service, the
// PDB, the admission policy), but the Namespace, which Helm's release
// does not own; its labels add Helm's to deploy/reconcile's. A change to
// deploy/reconcile, examples/install or the chart without the others
// fails here. The values that turn parts on or off add or drop exactly
// those objects.
func TestTheChartIsTheInstallExample(t *testing.T) {
	kustomized := objects(t, installExample(t))
	delete(kustomized, "Namespace /cairn")
	monitoring := []string{"PodMonitor cairn/cairn-reconcile", "PrometheusRule cairn/cairn"}
	admission := []string{"ValidatingAdmissionPolicy /cairn-runtime-sets-only-roles", "ValidatingAdmissionPolicyBinding /cairn-runtime-sets-only-roles"}
	for _, c := range []struct {
		name        string
		set         []string
		plus, minus []string
	}{
		{"examples/install's values", nil, nil, nil},
		{"monitoring on", []string{"--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true"}, monitoring, nil},
		{"the admission policy installed elsewhere", []string{"--set", "admissionPolicy.enabled=false"}, nil, admission},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream, err := helmTemplate(t, cairnNS, c.set...)
			if err != nil {
				t.Fatal(err)
			}
			charted := objects(t, stream)
			want := slices.Concat(slices.Collect(maps.Keys(kustomized)), c.plus)
			want = slices.DeleteFunc(want, func(id string) bool { return slices.Contains(c.minus, id) })
			slices.Sort(want)
			if got := slices.Sorted(maps.Keys(charted)); !slices.Equal(got, want) {
				t.Fatalf("the chart renders %v,\nwant %v", got, want)
			}
			for id, k := range kustomized {
				h, ok := charted[id]
				if !ok {
					continue
				}
				kRest, kLabels := withoutLabels(k.obj)
				hRest, hLabels := withoutLabels(h.obj)
				if !reflect.DeepEqual(kRest, hRest) {
					t.Errorf("%s differs:\nkustomize build examples/install:\n%s\nhelm template charts/cairn:\n%s", id, k.doc, h.doc)
					continue
				}
				for i, kl := range kLabels {
					for name, v := range kl {
						if hLabels[i][name] != v {
							t.Errorf("%s: label %s=%v, the chart's is %v", id, name, v, hLabels[i][name])
						}
					}
				}
			}
		})
	}
}

// The chart's copies of deploy/admission's policy and
// deploy/monitoring's rules are those files, byte for byte (Helm reads
// no file outside the chart).
func TestTheChartsFilesAreDeploys(t *testing.T) {
	for _, c := range []struct{ copy, file string }{
		{"files/runtime-policy.yaml", "deploy/admission/runtime-policy.yaml"},
		{"files/prometheusrule.yaml", "deploy/monitoring/prometheusrule.yaml"},
	} {
		got, err := os.ReadFile(filepath.Join(chartDir, c.copy))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("charts/cairn/%s is not %s: cp %[2]s charts/cairn/%[1]s", c.copy, c.file)
		}
	}
}

// Values the chart cannot install are refused by values.schema.json (or
// a required value) saying which value and what is wrong; a Secret's
// data has no place in the values.
func TestTheChartRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		name string
		set  []string
		want []string
	}{
		{"no repo", []string{"--set", "repo="}, []string{"repo", "does not match pattern"}},
		{"a repo that is no URL", []string{"--set", "repo=github.com/x"}, []string{"repo", "does not match pattern"}},
		{"no replicas", []string{"--set", "replicas=0"}, []string{"replicas", "minimum"}},
		{"replicas as a word", []string{"--set-string", "replicas=three"}, []string{"replicas", "want integer"}},
		{"a token in the values", []string{"--set", "secret.gitToken=ghp_x"}, []string{"secret", "gitToken"}},
		{"a key the chart does not know", []string{"--set", "replica=2"}, []string{"replica"}},
		{"an interval that is no duration", []string{"--set", "interval=often"}, []string{"interval", "does not match pattern"}},
		{"a clusters namespace that is no name", []string{"--set", "clustersNamespace=Data_Bases"}, []string{"clustersNamespace"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := helmTemplate(t, cairnNS, c.set...)
			if err == nil {
				t.Fatalf("helm template %v: rendered, want refused", c.set)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: want it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "ghp_x") {
				t.Errorf("the refusal prints the token: %v", err)
			}
		})
	}
}
