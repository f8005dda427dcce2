package renderer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/plan"
)

// The layout of a cluster's rendered tree (see the package documentation)
// is the renderer's own: the files here read it back, so no other package
// parses kustomization.yaml or plan.json by hand.

// baseDir is the folder of the cluster as it runs before the plan,
// relative to Root.
const baseDir = "base"

// Built is what kustomize builds of a rendered tree, as Render checked it.
type Built struct {
	// Base is the cluster as it runs before the plan; nil when it does not
	// run yet (the plan has no baseline).
	Base []byte
	// Selected is what the entry point selects: the current step, or the
	// base when no step is current.
	Selected []byte
}

// buildAll checks that every folder of the tree builds, and returns the
// builds of the base and of the entry point, which selects entry. Each
// overlay builds on the one before, so building the last builds them all
// (and building the entry point does when it selects the last); only when
// that fails are the folders built in order, to name the step at fault.
// The last overlay's output is not needed, so it is checked, not written
// out as YAML. The builds share one in-memory copy of the tree.
func buildAll(t Tree, root string, dirs []string, entry string) (Built, error) {
	mem, err := memFS(t)
	if err != nil {
		return Built{}, err
	}
	if last := dirs[len(dirs)-1]; last != entry {
		if _, err := run(mem, path.Join(root, last)); err != nil {
			return Built{}, stepAtFault(mem, root, dirs, err)
		}
	}
	var b Built
	if b.Selected, err = build(mem, root); err != nil {
		if entry == dirs[len(dirs)-1] {
			return Built{}, stepAtFault(mem, root, dirs, fmt.Errorf("entry point: %w", err))
		}
		return Built{}, fmt.Errorf("entry point: %w", err)
	}
	switch {
	case dirs[0] != baseDir: // the cluster does not run yet
	case entry == baseDir:
		b.Base = b.Selected
	default:
		if b.Base, err = build(mem, path.Join(root, baseDir)); err != nil {
			return Built{}, fmt.Errorf("step base: %w", err)
		}
	}
	return b, nil
}

// checkAll checks what buildAll checks, building as little as that
// takes: the last folder, which builds every one before it, wrapped in
// the entry point when the entry selects it (the entry point's own
// kustomization is then checked too); only when that fails are the
// folders built in order, to name the step at fault.
func checkAll(t Tree, root string, dirs []string, entry string) error {
	mem, err := memFS(t)
	if err != nil {
		return err
	}
	last := dirs[len(dirs)-1]
	if last != entry {
		if _, err := run(mem, path.Join(root, last)); err != nil {
			return stepAtFault(mem, root, dirs, err)
		}
		// The entry point selects a folder the last one built on, and is
		// the kustomization that selects it, byte for byte.
		want := Tree{}
		if err := putKustomization(want, root, kustomization{Resources: []string{entry}}); err != nil {
			return err
		}
		if k := root + "/kustomization.yaml"; !bytes.Equal(t[k], want[k]) {
			held := t[k]
			if len(held) > 200 {
				held = append(held[:200:200], "..."...)
			}
			return fmt.Errorf("entry point: %s is not the kustomization that selects %s; it holds %q", k, entry, held)
		}
		return nil
	}
	if _, err := run(mem, root); err != nil {
		return stepAtFault(mem, root, dirs, fmt.Errorf("entry point: %w", err))
	}
	return nil
}

// stepAtFault builds the folders in order to name the first that does
// not build; err when each does.
func stepAtFault(mem filesys.FileSystem, root string, dirs []string, err error) error {
	for _, d := range dirs {
		if _, cerr := run(mem, path.Join(root, d)); cerr != nil {
			return fmt.Errorf("step %s: %w", strings.TrimPrefix(d, "steps/"), cerr)
		}
	}
	return err
}

// Entry is what a cluster's rendered entry point selects, read back from a
// rendered tree or a commit of the GitOps repo.
type Entry struct {
	// Step is the ID of the step the entry point selects; "" when it
	// selects the base.
	Step string
	// Plan is the plan the tree was rendered for (its plan.json).
	Plan plan.Plan
}

// Selected returns the step of the plan the entry point selects.
func (e Entry) Selected() (plan.Step, bool) {
	for _, s := range e.Plan.Steps {
		if s.ID == e.Step {
			return s, true
		}
	}
	return plan.Step{}, false
}

// ReadEntry reads the entry point of cluster's rendered tree and its plan
// through read, which returns a file by its slash-separated path from the
// GitOps repo's root (Tree.ReadFile, or a commit's reader). Entry.Step is
// set as soon as the entry point is read, even when the error says the
// plan cannot be; an error with Step "" means the entry point itself
// cannot be read or selects neither the base nor a step.
func ReadEntry(read func(path string) ([]byte, error), cluster string) (Entry, error) {
	root := Root(cluster)
	data, err := read(root + "/kustomization.yaml")
	if err != nil {
		return Entry{}, fmt.Errorf("entry point of %s: %w", cluster, err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return Entry{}, fmt.Errorf("entry point of %s: %w", cluster, err)
	}
	var e Entry
	switch {
	case len(k.Resources) == 1 && strings.HasPrefix(k.Resources[0], StepDir("")):
		e.Step = strings.TrimPrefix(k.Resources[0], StepDir(""))
	case len(k.Resources) != 1 || k.Resources[0] != baseDir:
		return Entry{}, fmt.Errorf("entry point of %s selects %v, neither the base nor one step", cluster, k.Resources)
	}
	if data, err = read(root + "/plan.json"); err != nil {
		return e, fmt.Errorf("its plan.json cannot be read: %w", err)
	}
	if err := json.Unmarshal(data, &e.Plan); err != nil {
		return e, fmt.Errorf("plan.json: %w", err)
	}
	return e, nil
}

// ReadFile returns the file of the tree at path, for ReadEntry.
func (t Tree) ReadFile(path string) ([]byte, error) {
	data, ok := t[path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	return data, nil
}

// Clusters are the clusters whose rendered folders (Root) the tree holds,
// sorted.
func (t Tree) Clusters() []string {
	var out []string
	prefix := Root("")
	for p := range t {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			if c, _, ok := strings.Cut(rest, "/"); ok && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}
