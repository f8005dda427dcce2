package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/renderer"
)

type diffOptions struct {
	repo   string
	src    liveSource
	specs  specsFlag
	images renderer.Options
}

func newDiff() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff [CLUSTER] --repo DIR [--kubeconfig FILE]",
		Short: "Show how each cluster's rendered objects differ from the live ones (server-side dry run)",
		Long: `Plan every cluster of the repo against the Kubernetes cluster (or only
CLUSTER), build the tree cairn render would write (kustomize build of
rendered/<cluster>/, its entry point at the plan's first step), apply each
object with a server-side dry run (field manager cairn) and print a
unified diff of the live object against the result, as kubectl diff does.
Objects not there yet are shown as added. managedFields, resourceVersion,
uid, generation, creationTimestamp and status are left out. Nothing is
written to the cluster or the repo.

As any server-side apply, the dry run keeps fields another field manager
(Argo CD, Flux) owns that the rendered objects no longer set: a field
removed from the rendered tree may not show as removed.

The cluster is found as kubectl finds it: --kubeconfig, $KUBECONFIG,
~/.kube/config, then the pod's ServiceAccount; objects whose spec names no
namespace go to --namespace, or the context's.

Exit codes: 0 no differences, 1 an error (the diff of the other objects is
still printed), 2 usage, 3 a plan refuses a spec change (nothing is
rendered for it), 4 differences found.`,
		Example: `  # every cluster of the checkout against the current kubeconfig context
  cairn diff --repo .

  # one cluster, in the namespace its runs in
  cairn diff my-production-db --repo . --kubeconfig ~/.kube/prod --namespace databases`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "GitOps repo directory (required)")
	f.StringVar(&o.src.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.src.context, "context", "", "the kubeconfig context to use (default: its current context)")
	f.BoolVar(&o.src.inCluster, "in-cluster", false, "diff against the Kubernetes cluster cairn runs in, through its ServiceAccount")
	f.StringVar(&o.src.namespace, "namespace", "", "the namespace of clusters whose spec names none (default: the kubeconfig context's, or the pod's)")
	o.specs.add(f)
	imageFlags(f, &o.images)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

func runDiff(ctx context.Context, w, errw io.Writer, o diffOptions, args []string) error {
	rend, err := newRenderer(o.images)
	if err != nil {
		return &exitError{exitUsage, fmt.Errorf("cairn diff: %w", err)}
	}
	clusters, err := loadClusters("cairn diff", o.repo, o.specs.layout(""), args)
	if err != nil {
		return err
	}
	target, err := o.src.target()
	if err != nil {
		return err
	}
	d, err := newDiffer(target)
	if err != nil {
		return err
	}
	observed, err := o.src.readAny(ctx, clusters)
	if err != nil {
		return err
	}
	pols, err := policySet(o.repo)
	if err != nil {
		return err
	}
	plans := newPlanner().WithImages(rend.Images).Plan(clusters, observed, pols)
	var errs []error
	differ, refused := 0, false
	for _, c := range clusters {
		p := find(plans, c.Ref())
		if p.Status == plan.StatusRefused {
			refused = true
			fmt.Fprintf(errw, "%s: the plan refuses the spec (cairn plan says why); nothing to diff\n", c.Ref())
			continue
		}
		current := ""
		if len(p.Steps) > 0 {
			current = p.Steps[0].ID
		}
		tree, _, err := rend.Render(c, p, current)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stream, err := renderer.Build(tree, renderer.Root(c.Ref().Name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ns := c.Ref().Namespace
		if ns == "" {
			ns = target.Namespace
		}
		n, err := d.diffStream(ctx, w, stream, ns)
		differ += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Ref(), err))
		}
	}
	switch {
	case len(errs) > 0:
		return errors.Join(errs...)
	case refused:
		return &exitError{code: exitRefusals}
	case differ > 0:
		return &exitError{code: exitDiff}
	}
	return nil
}

// differ dry-runs objects against one API server.
type differ struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newDiffer(t *kubeTarget) (*differ, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(t.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(t.Config)
	if err != nil {
		return nil, err
	}
	return &differ{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// diffStream diffs every object of a YAML stream, placing namespaced
// objects that name no namespace in ns, and returns how many differ.
func (d *differ) diffStream(ctx context.Context, w io.Writer, stream []byte, ns string) (int, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	n := 0
	var errs []error
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return n, fmt.Errorf("read the rendered objects: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		text, err := d.diffOne(ctx, &obj, ns)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if text != "" {
			n++
			if _, err := io.WriteString(w, text); err != nil {
				return n, err
			}
		}
	}
	return n, errors.Join(errs...)
}

// diffOne dry-runs obj and returns the unified diff of the live object
// against the result; "" when they are the same.
func (d *differ) diffOne(ctx context.Context, obj *unstructured.Unstructured, ns string) (string, error) {
	gvk := obj.GroupVersionKind()
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	var res dynamic.ResourceInterface = d.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(ns)
		}
		res = d.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	name := objectName(obj)
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return "", err
	}
	// The live object first, then the dry run, as kubectl diff does: the
	// dry run applies onto what was read, or onto something newer.
	liveText := ""
	current, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("read %s: %w", name, err)
	default:
		if liveText, err = diffText(current); err != nil {
			return "", err
		}
	}
	force := true
	merged, err := res.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "cairn", Force: &force})
	if err != nil {
		return "", fmt.Errorf("dry-run apply %s: %w", name, err)
	}
	mergedText, err := diffText(merged)
	if err != nil {
		return "", err
	}
	if liveText == mergedText {
		return "", nil
	}
	from := "live/" + name
	if liveText == "" {
		from = "/dev/null"
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(liveText), B: lines(mergedText),
		FromFile: from, ToFile: "cairn/" + name, Context: 3})
}

// objectName names an object in a diff header: group/version/Kind,
// namespace and name.
func objectName(o *unstructured.Unstructured) string {
	parts := []string{o.GetAPIVersion(), o.GetKind()}
	if o.GetNamespace() != "" {
		parts = append(parts, o.GetNamespace())
	}
	return strings.Join(append(parts, o.GetName()), "/")
}

// diffText is an object as YAML without what the API server keeps for
// itself.
func diffText(o *unstructured.Unstructured) (string, error) {
	c := o.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	data, err := yaml.Marshal(c.Object)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", objectName(o), err)
	}
	return string(data), nil
}

// lines splits text after each newline; no lines for "".
func lines(text string) []string {
	out := strings.SplitAfter(text, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
