package renderer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/contract"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Renderer renders clusters of the kinds it has, with fixed image options.
type Renderer struct {
	opts  Options
	kinds map[string]Kind
	// images memoises Images by kind, version and upgradeFrom: they depend
	// on nothing else, and the planner asks for every cluster of a pass.
	images sync.Map
}

// New returns a renderer of these kinds (cmd/cairn's table of kinds wires
// them), checking the options. Two renderers of one kind are an error.
func New(o Options, kinds ...Kind) (*Renderer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	r := &Renderer{opts: o.withDefaults(), kinds: make(map[string]Kind, len(kinds))}
	for _, k := range kinds {
		if _, dup := r.kinds[k.Kind()]; dup {
			return nil, fmt.Errorf("two renderers for kind %s", k.Kind())
		}
		r.kinds[k.Kind()] = k
	}
	return r, nil
}

// Root is the folder of a cluster's rendered tree in the GitOps repo.
func Root(cluster string) string { return "rendered/" + cluster }

// StepDir is the folder of a step's overlay, relative to Root.
func StepDir(stepID string) string { return "steps/" + stepID }

// Render returns the kustomize tree of one cluster for plan p, with the
// entry point selecting step current ("" selects the state before the
// plan's first step), and the built manifests of its base and of the
// selected step. Every overlay and the entry point pass kustomize build
// before Render returns.
func (r *Renderer) Render(c spec.Cluster, p plan.Plan, current string) (Tree, Built, error) {
	t, l, err := r.tree(c, p, current)
	if err != nil {
		return nil, Built{}, err
	}
	built, err := buildAll(t, l.root, l.dirs, l.entry)
	if err != nil {
		return nil, Built{}, fmt.Errorf("render %s: %w", c.Ref(), err)
	}
	return t, built, nil
}

// Check renders the tree Render renders and checks, as Render does, that
// every folder of it builds, without the builds Render returns: a caller
// that only writes the tree out (cairn render) needs one kustomize build
// a cluster where Render makes up to three.
func (r *Renderer) Check(c spec.Cluster, p plan.Plan, current string) (Tree, error) {
	t, l, err := r.tree(c, p, current)
	if err != nil {
		return nil, err
	}
	if err := checkAll(t, l.root, l.dirs, l.entry); err != nil {
		return nil, fmt.Errorf("render %s: %w", c.Ref(), err)
	}
	return t, nil
}

// layout is where a rendered tree's folders are: its root, the base and
// step folders in order, and the one the entry point selects.
type layout struct {
	root, entry string
	dirs        []string
}

// tree renders c's tree for p with the entry point at current, unbuilt.
func (r *Renderer) tree(c spec.Cluster, p plan.Plan, current string) (Tree, layout, error) {
	ref := c.Ref()
	if p.Cluster.Kind != ref.Kind || p.Cluster.Name != ref.Name {
		return nil, layout{}, fmt.Errorf("render %s: the plan is for %s", ref, p.Cluster)
	}
	t, dirs, err := r.renderDirs(c, p)
	if err != nil {
		return nil, layout{}, fmt.Errorf("render %s: %w", ref, err)
	}
	root := Root(ref.Name)
	entry := baseDir
	if current != "" {
		if !slices.Contains(dirs, StepDir(current)) {
			return nil, layout{}, fmt.Errorf("render %s: plan %s has no step %q", ref, p.ID, current)
		}
		entry = StepDir(current)
	} else if p.Baseline == nil {
		return nil, layout{}, fmt.Errorf("render %s: the cluster does not run yet, so there is nothing before the first step; render a step", ref)
	}
	if err := putKustomization(t, root, kustomization{Resources: []string{entry}}); err != nil {
		return nil, layout{}, err
	}
	t[root+"/PLAN.md"] = planMarkdown(p, current)
	pj, err := p.EncodeJSON()
	if err != nil {
		return nil, layout{}, fmt.Errorf("render %s: %w", ref, err)
	}
	t[root+"/plan.json"] = pj
	if err := r.putMonitoring(t, c); err != nil {
		return nil, layout{}, fmt.Errorf("render %s: %w", ref, err)
	}
	return t, layout{root: root, entry: entry, dirs: dirs}, nil
}

// renderDirs renders the base (for a running cluster) and one overlay per
// step, each patching the one before.
func (r *Renderer) renderDirs(c spec.Cluster, p plan.Plan) (Tree, []string, error) {
	t := Tree{}
	root := Root(c.Ref().Name)
	var dirs []string
	cur := baseSettings(c, p)
	var prevDir string
	var prevFiles map[string]object
	if cur != nil {
		files, err := r.files(c, p, *cur, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("base: %w", err)
		}
		if err := putFull(t, root+"/base", c, dataOf(files)); err != nil {
			return nil, nil, err
		}
		prevDir, prevFiles = "base", files
		dirs = append(dirs, "base")
	}
	for _, s := range p.Steps {
		next, err := r.next(c, cur, s)
		if err != nil {
			return nil, nil, err
		}
		files, err := r.files(c, p, next, prevFiles)
		if err != nil {
			return nil, nil, fmt.Errorf("step %s: %w", s.ID, err)
		}
		dir := StepDir(s.ID)
		if s.Kind == plan.CreateCluster {
			err = putFull(t, root+"/"+dir, c, dataOf(files))
		} else {
			err = putOverlay(t, root+"/"+dir, relPath(dir, prevDir), c.Ref().Namespace, prevFiles, files)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("step %s: %w", s.ID, err)
		}
		cur, prevDir, prevFiles = &next, dir, files
		dirs = append(dirs, dir)
	}
	return t, dirs, nil
}

func (r *Renderer) next(c spec.Cluster, cur *Settings, s plan.Step) (Settings, error) {
	k, ok := r.kinds[c.Ref().Kind]
	if !ok {
		return Settings{}, fmt.Errorf("cairn has no renderer for kind %q", c.Ref().Kind)
	}
	if cur == nil {
		if s.Kind != plan.CreateCluster {
			return Settings{}, fmt.Errorf("step %s: a cluster that does not run yet must be created first", s.ID)
		}
		return createSettings(k, c, s)
	}
	return cur.apply(k, c, s)
}

// object is a rendered object as plain data (toMap), and the JSON of the
// typed object it was made from.
type object struct {
	data map[string]any
	json []byte
}

func dataOf(files map[string]object) map[string]map[string]any {
	out := make(map[string]map[string]any, len(files))
	for f, o := range files {
		out[f] = o.data
	}
	return out
}

// files renders the objects of the cluster at Settings s, by file name.
// An object whose JSON is that of the same file in prev (the state
// before) is prev's, not decoded again: the data is a function of the
// JSON, and is never written to once made.
func (r *Renderer) files(c spec.Cluster, p plan.Plan, s Settings, prev map[string]object) (map[string]object, error) {
	initial, token := 0, ""
	if len(p.Steps) > 0 && p.Steps[0].Kind == plan.CreateCluster {
		initial, token = p.Steps[0].Params.CreateCluster.Members, clusterToken(c.Ref())
	}
	k, ok := r.kinds[c.Ref().Kind]
	if !ok {
		return nil, fmt.Errorf("cairn has no renderer for kind %q", c.Ref().Kind)
	}
	objs, err := k.Objects(c, Input{Settings: s, Options: r.opts, Token: token, InitialMembers: initial})
	if err != nil {
		return nil, err
	}
	out := make(map[string]object, len(objs))
	for _, o := range objs {
		raw, err := json.Marshal(o.Obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		if old, ok := prev[o.File]; ok && bytes.Equal(old.json, raw) {
			out[o.File] = old
			continue
		}
		m, err := jsonToMap(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		out[o.File] = object{data: m, json: raw}
	}
	return out, nil
}

// clusterToken is etcd's initial cluster token: stable for a cluster (a
// re-plan while it is being created must not change it), distinct between
// clusters.
func clusterToken(ref spec.Ref) string {
	sum := sha256.Sum256([]byte(ref.Namespace + "/" + ref.Name))
	return ref.Name + "-" + hex.EncodeToString(sum[:4])
}

func relPath(from, to string) string {
	up := strings.Repeat("../", strings.Count(from, "/")+1)
	return up + to
}

// kustomization is the subset of a Kustomization cairn writes.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Patches    []patch  `json:"patches,omitempty"`
}

type patch struct {
	Path   string  `json:"path"`
	Target *target `json:"target,omitempty"`
}

type target struct {
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
}

func putKustomization(t Tree, dir string, k kustomization) error {
	k.APIVersion, k.Kind = "kustomize.config.k8s.io/v1beta1", "Kustomization"
	data, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	t[dir+"/kustomization.yaml"] = data
	return nil
}

// putFull writes every object of a state as the resources of dir.
func putFull(t Tree, dir string, c spec.Cluster, files map[string]map[string]any) error {
	k := kustomization{Namespace: c.Ref().Namespace}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		data, err := marshalYAMLData(files[f])
		if err != nil {
			return err
		}
		t[dir+"/"+f] = data
		k.Resources = append(k.Resources, f)
	}
	return putKustomization(t, dir, k)
}

// putOverlay writes an overlay of prev that holds only the changes to
// reach next: new objects as resources, changed objects as JSON patches,
// and removed objects as delete patches. An object whose JSON is the same
// has no patch (diff of equal data is empty).
func putOverlay(t Tree, dir, prevDir, namespace string, prev, next map[string]object) error {
	// The namespace is set again: objects new in this overlay (grown
	// volumes) must land beside those of the base.
	k := kustomization{Namespace: namespace, Resources: []string{prevDir}}
	for _, f := range slices.Sorted(maps.Keys(next)) {
		old, ok := prev[f]
		if !ok {
			data, err := marshalYAMLData(next[f].data)
			if err != nil {
				return err
			}
			t[dir+"/"+f] = data
			k.Resources = append(k.Resources, f)
			continue
		}
		if bytes.Equal(old.json, next[f].json) {
			continue
		}
		ops := diff(old.data, next[f].data)
		if len(ops) == 0 {
			continue
		}
		data, err := yaml.Marshal(ops)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(f, ".yaml") + ".patch.yaml"
		t[dir+"/"+name] = data
		k.Patches = append(k.Patches, patch{Path: name, Target: targetOf(next[f].data)})
	}
	for _, f := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := next[f]; ok {
			continue
		}
		data, err := marshalYAMLData(deletePatch(prev[f].data))
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(f, ".yaml") + ".delete.yaml"
		t[dir+"/"+name] = data
		k.Patches = append(k.Patches, patch{Path: name})
	}
	return putKustomization(t, dir, k)
}

func targetOf(obj map[string]any) *target {
	api, _ := obj["apiVersion"].(string)
	group, version, found := strings.Cut(api, "/")
	if !found {
		group, version = "", api
	}
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return &target{Group: group, Version: version, Kind: kind, Name: name}
}

// deletePatch is a strategic-merge patch that removes an object from the
// build output.
func deletePatch(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	return map[string]any{
		"$patch":     "delete",
		"apiVersion": obj["apiVersion"],
		"kind":       obj["kind"],
		"metadata":   map[string]any{"name": meta["name"]},
	}
}

// Images are the images, by container name (init containers too), of the
// pod template the renderer writes for cluster c at version, with a
// pg_upgrade init container from major upgradeFrom (0 for none): what a
// step that changes the template brings. The planner compares them with
// those that run (planner.Planner.WithImages).
func (r *Renderer) Images(c spec.Cluster, version string, upgradeFrom int) (map[string]string, error) {
	key := fmt.Sprintf("%s\x00%s\x00%d", c.Ref().Kind, version, upgradeFrom)
	if m, ok := r.images.Load(key); ok {
		return maps.Clone(m.(map[string]string)), nil
	}
	m, err := r.templateImages(c, version, upgradeFrom)
	if err != nil {
		return nil, err
	}
	r.images.Store(key, m)
	return maps.Clone(m), nil
}

func (r *Renderer) templateImages(c spec.Cluster, version string, upgradeFrom int) (map[string]string, error) {
	k, ok := r.kinds[c.Ref().Kind]
	if !ok {
		return nil, fmt.Errorf("cairn has no renderer for kind %q", c.Ref().Kind)
	}
	s := Settings{Replicas: 1, Version: version, Storage: "1Gi", TemplateStorage: "1Gi", Bootstrap: contract.BootstrapExisting, UpgradeFrom: upgradeFrom}
	objs, err := k.Objects(c, Input{Settings: s, Options: r.opts})
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if sts, ok := o.Obj.(*appsv1.StatefulSet); ok {
			out := map[string]string{}
			spec := sts.Spec.Template.Spec
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				out[c.Name] = c.Image
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("the renderer of %s writes no StatefulSet", c.Ref().Kind)
}
