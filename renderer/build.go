package renderer

import (
	"fmt"
	"path"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// buildMu serialises kustomize builds: concurrent builds can panic
// (kubernetes-sigs/kustomize#3659), as Flux and Kargo also found.
var buildMu sync.Mutex

// Build runs kustomize build on dir of tree (a path of the tree, such as
// "rendered/db/steps/01-create") in memory and returns the YAML stream.
func Build(tree Tree, dir string) ([]byte, error) {
	resMap, err := run(tree, dir)
	if err != nil {
		return nil, err
	}
	out, err := resMap.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return out, nil
}

// check runs kustomize build on dir of tree as Build does, without
// writing the output out.
func check(tree Tree, dir string) error {
	_, err := run(tree, dir)
	return err
}

func run(tree Tree, dir string) (resmap.ResMap, error) {
	fs := filesys.MakeFsInMemory()
	for p, data := range tree {
		if err := fs.MkdirAll(path.Dir("/" + p)); err != nil {
			return nil, err
		}
		if err := fs.WriteFile("/"+p, data); err != nil {
			return nil, err
		}
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(fs, "/"+dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return resMap, nil
}
