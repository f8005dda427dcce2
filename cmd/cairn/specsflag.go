package main

import (
	"github.com/spf13/pflag"

	"github.com/cairn-dev/cairn/planner/spec"
)

// specsFlag is where a command finds the cluster specs (--specs) and
// where those specs may deploy to (--allowed-namespaces).
type specsFlag struct {
	dir        string
	namespaces []string
}

func (s *specsFlag) add(f *pflag.FlagSet) {
	f.StringVar(&s.dir, "specs", spec.DefaultLayout.SpecsDir, "folder of the repo holding cluster specs")
	f.StringSliceVar(&s.namespaces, "allowed-namespaces", nil, "the only namespaces a spec may name (comma-separated; default: any but kube-system, kube-public and kube-node-lease)")
}

// layout is the repo layout of the specs, with rendered as the rendered
// folder ("" is the default).
func (s specsFlag) layout(rendered string) spec.Layout {
	return spec.Layout{SpecsDir: s.dir, RenderedDir: rendered, Namespaces: s.namespaces}
}
