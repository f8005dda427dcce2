package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-dev/cairn/renderer"
)

// Flux's field manager and owner labels, as kustomize-controller sets them.
var fluxOwner = ssa.Owner{Field: "kustomize-controller", Group: "kustomize.toolkit.fluxcd.io"}

// pruneDisabled is Flux's annotation that keeps an object when it leaves
// the source (cairn puts it on the claims it renders).
var pruneDisabled = map[string]string{fluxOwner.Group + "/prune": "disabled"}

// Sync is a stand-in for Argo CD or Flux: it takes the rendered/<cluster>
// folders of a branch's head, builds each with kustomize, and applies the
// objects server-side into one namespace (as Flux's targetNamespace does),
// pruning what a folder no longer holds, the way kustomize-controller does
// with github.com/fluxcd/pkg/ssa.
type Sync struct {
	ns  string
	mgr *ssa.ResourceManager

	mu sync.Mutex
	// applied are the objects each cluster's folder applied last: the
	// inventory pruning and drift checks go by.
	applied map[string][]*unstructured.Unstructured
}

// NewSync returns a sync stand-in applying into namespace ns.
func (cp *ControlPlane) NewSync(t testing.TB, ns string) *Sync {
	t.Helper()
	c, err := client.New(cp.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	poller := polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{})
	return &Sync{ns: ns, mgr: ssa.NewResourceManager(c, poller, fluxOwner), applied: map[string][]*unstructured.Unstructured{}}
}

// FromRepo reads the rendered/ folder at the head of branch in the git
// repository at dir (bare or not).
func FromRepo(dir, branch string) (renderer.Tree, error) {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return nil, fmt.Errorf("branch %s: %w", branch, err)
	}
	commit, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return nil, err
	}
	files, err := commit.Files()
	if err != nil {
		return nil, err
	}
	tree := renderer.Tree{}
	err = files.ForEach(func(f *object.File) error {
		if !strings.HasPrefix(f.Name, "rendered/") {
			return nil
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		tree[f.Name], err = io.ReadAll(r)
		return err
	})
	return tree, err
}

// Apply syncs every rendered/<cluster> folder of tree: a folder whose
// build fails applies nothing (Flux keeps the last good revision), and the
// others still apply. It returns the change sets' summary lines.
func (s *Sync) Apply(ctx context.Context, tree renderer.Tree) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var changes []string
	var errs []error
	present := tree.Clusters()
	for _, cluster := range present {
		out, err := s.applyCluster(ctx, tree, cluster)
		changes = append(changes, out...)
		errs = append(errs, err)
	}
	// A folder removed from the branch: everything it applied is pruned.
	for _, cluster := range sortedKeys(s.applied) {
		if !slices.Contains(present, cluster) {
			out, err := s.prune(ctx, cluster, nil)
			changes = append(changes, out...)
			errs = append(errs, err)
		}
	}
	return changes, errors.Join(errs...)
}

func (s *Sync) applyCluster(ctx context.Context, tree renderer.Tree, cluster string) ([]string, error) {
	objs, err := s.build(tree, cluster)
	if err != nil {
		return nil, err
	}
	cs, err := s.mgr.ApplyAllStaged(ctx, objs, ssa.DefaultApplyOptions())
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", cluster, err)
	}
	var out []string
	for _, e := range cs.Entries {
		if e.Action != ssa.UnchangedAction {
			out = append(out, e.String())
		}
	}
	pruned, err := s.prune(ctx, cluster, objs)
	return append(out, pruned...), err
}

// prune deletes what cluster's folder applied before and no longer holds
// (all of it when objs is nil), then makes objs the inventory. A failed
// prune keeps the old inventory, so the next sync tries again, as Flux
// does.
func (s *Sync) prune(ctx context.Context, cluster string, objs []*unstructured.Unstructured) ([]string, error) {
	var out []string
	if stale := staleObjects(s.applied[cluster], objs); len(stale) > 0 {
		opts := ssa.DefaultDeleteOptions()
		opts.Exclusions = pruneDisabled
		del, err := s.mgr.DeleteAll(ctx, stale, opts)
		if err != nil {
			return out, fmt.Errorf("prune %s: %w", cluster, err)
		}
		for _, e := range del.Entries {
			out = append(out, e.String())
		}
	}
	if objs == nil {
		delete(s.applied, cluster)
	} else {
		s.applied[cluster] = objs
	}
	return out, nil
}

// build runs kustomize on rendered/<cluster> and returns its objects,
// placed in the sync's namespace and labelled as Flux owns them.
func (s *Sync) build(tree renderer.Tree, cluster string) ([]*unstructured.Unstructured, error) {
	stream, err := renderer.Build(tree, renderer.Root(cluster))
	if err != nil {
		return nil, err
	}
	objs, err := utils.ReadObjects(bytes.NewReader(stream))
	if err != nil {
		return nil, fmt.Errorf("read objects of %s: %w", cluster, err)
	}
	for _, o := range objs {
		o.SetNamespace(s.ns)
	}
	s.mgr.SetOwnerLabels(objs, cluster, s.ns)
	return objs, nil
}

// staleObjects are the objects of before that after no longer holds.
func staleObjects(before, after []*unstructured.Unstructured) []*unstructured.Unstructured {
	key := func(o *unstructured.Unstructured) string {
		return o.GroupVersionKind().GroupKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	keep := map[string]bool{}
	for _, o := range after {
		keep[key(o)] = true
	}
	var stale []*unstructured.Unstructured
	for _, o := range before {
		if !keep[key(o)] {
			stale = append(stale, o)
		}
	}
	return stale
}

// Drift is a server-side dry-run diff of the objects each folder applied
// last against the live ones: what Argo CD or Flux would show as out of
// sync. Empty means no drift.
func (s *Sync) Drift(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var drift []string
	for _, cluster := range sortedKeys(s.applied) {
		for _, o := range s.applied[cluster] {
			e, _, _, err := s.mgr.Diff(ctx, o.DeepCopy(), ssa.DefaultDiffOptions())
			if err != nil {
				return drift, fmt.Errorf("diff %s: %w", utils.FmtUnstructured(o), err)
			}
			if e.Action != ssa.UnchangedAction && e.Action != ssa.SkippedAction {
				drift = append(drift, e.String())
			}
		}
	}
	return drift, nil
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
