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
// (kubernetes-sigs/kustomize#3659), as Flux and Kargo also found. It is
// held for krusty's Run, which reads the filesystem and kustomize's
// process-wide state; writing a built result out as YAML (resourcesYAML)
// reads only that result, and runs outside it.
var buildMu sync.Mutex

// Build runs kustomize build on dir of tree (a path of the tree, such as
// "rendered/db/steps/01-create") in memory and returns the YAML stream.
func Build(tree Tree, dir string) ([]byte, error) {
	fs, err := memFS(tree)
	if err != nil {
		return nil, err
	}
	return build(fs, dir)
}

// memFS is an in-memory filesystem holding the files of t at their
// paths under "/". kustomize only reads it, so builds may share one.
func memFS(t Tree) (filesys.FileSystem, error) {
	fs := filesys.MakeFsInMemory()
	for p, data := range t {
		if err := fs.MkdirAll(path.Dir("/" + p)); err != nil {
			return nil, err
		}
		if err := fs.WriteFile("/"+p, data); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// build runs kustomize build on dir of fs and returns the YAML stream.
func build(fs filesys.FileSystem, dir string) ([]byte, error) {
	resMap, err := run(fs, dir)
	if err != nil {
		return nil, err
	}
	out, err := resourcesYAML(resMap)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return out, nil
}

func run(fs filesys.FileSystem, dir string) (resmap.ResMap, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(fs, "/"+dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return resMap, nil
}
