package kubenode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// cgroupVersion is the cgroup hierarchy a machine runs: v1 (a hierarchy
// per controller, these machines) or v2 (the unified hierarchy: current
// distributions, GitHub's runners).
type cgroupVersion int

const (
	cgroupV1 cgroupVersion = 1
	cgroupV2 cgroupVersion = 2
)

func (v cgroupVersion) String() string { return fmt.Sprintf("cgroup v%d", int(v)) }

// unifiedMount is where the unified hierarchy is mounted on a cgroup v2
// machine; its cgroup.controllers exists only there (on a v1 or hybrid
// machine the unified hierarchy, if any, is mounted elsewhere, without
// controllers).
const unifiedMount = "/sys/fs/cgroup"

// v2Controllers are the controllers the kubelet needs in the node's
// cgroup on the unified hierarchy (it refuses to start without cpu,
// memory and pids; cpuset, io and hugetlb it uses when there).
var v2Controllers = []string{"cpu", "memory", "pids"}

// v2Optional are the other controllers handed down when the machine has
// them.
var v2Optional = []string{"cpuset", "io", "hugetlb"}

// cgroups is what the node does with the machine's cgroups: the version,
// and the folders the node's cgroup is made in (its cgroupRoot), one per
// v1 hierarchy or the one unified mount.
type cgroups struct {
	version cgroupVersion
	dirs    []string
}

// machineCgroups detects this machine's cgroups (detectCgroups of /).
func machineCgroups() (cgroups, error) { return detectCgroups("/") }

// detectCgroups detects the cgroup hierarchy under root, a machine's
// file system root (a fake one in tests): <root>/sys/fs/cgroup/
// cgroup.controllers exists ⇒ v2, with the unified mount as the one
// folder; otherwise v1, with every cgroup v1 hierarchy that
// <root>/proc/self/mountinfo lists, under root.
func detectCgroups(root string) (cgroups, error) {
	unified := filepath.Join(root, unifiedMount)
	if _, err := os.Stat(filepath.Join(unified, "cgroup.controllers")); err == nil {
		return cgroups{version: cgroupV2, dirs: []string{unified}}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return cgroups{}, fmt.Errorf("detect cgroup v2: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(root, "proc", "self", "mountinfo"))
	if err != nil {
		return cgroups{}, fmt.Errorf("detect cgroup v1: %w", err)
	}
	var dirs []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		i := slices.Index(f, "-")
		if i < 0 || i+1 >= len(f) || f[i+1] != "cgroup" || len(f) < 5 {
			continue
		}
		dirs = append(dirs, filepath.Join(root, f[4]))
	}
	if len(dirs) == 0 {
		return cgroups{}, fmt.Errorf("no cgroup hierarchy: neither %s nor a cgroup v1 mount in %s",
			filepath.Join(unified, "cgroup.controllers"), filepath.Join(root, "proc", "self", "mountinfo"))
	}
	return cgroups{version: cgroupV1, dirs: dirs}, nil
}

// checkDelegated reports, on cgroup v2, whether the unified mount hands
// the controllers the kubelet needs down to its children (its
// cgroup.subtree_control): a cgroup made there gets no others. On a
// systemd machine the root cgroup does; in a container it is the
// container's own cgroup, and its processes must first move to a child
// (cgroup v2 lets a cgroup with processes hand no controller down): the
// error says how. On cgroup v1 every controller is its own hierarchy.
func (cg cgroups) checkDelegated() error {
	if cg.version != cgroupV2 {
		return nil
	}
	dir := cg.dirs[0]
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	have := strings.Fields(string(data))
	var missing []string
	for _, c := range v2Controllers {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cgroup v2: %s/cgroup.subtree_control hands down %q, the kubelet needs %v too; "+
			"in a container, move its processes to a child cgroup and enable them "+
			"(.github/workflows/ci.yml's step \"cgroup v2: delegate the controllers\" does)", dir, strings.Join(have, " "), missing)
	}
	return nil
}

// prepare makes the node's cgroup (named name, the kubelet's cgroupRoot)
// in every folder, and its system child, where the node's own processes
// run. On v1, a new cpuset has no CPUs or memory nodes until given its
// parent's. On v2, the node's cgroup holds no process itself and hands
// the controllers down to the kubelet's pods and to system.
func (cg cgroups) prepare(name string) error {
	for _, h := range cg.dirs {
		node := filepath.Join(h, name)
		for _, d := range []string{node, filepath.Join(node, "system")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("cgroup %s: %w", d, err)
			}
			if cg.version == cgroupV2 {
				continue
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				parent, err := os.ReadFile(filepath.Join(filepath.Dir(d), f))
				if err != nil {
					continue
				}
				if err := os.WriteFile(filepath.Join(d, f), parent, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %w", filepath.Join(d, f), err)
				}
			}
		}
		if cg.version == cgroupV2 {
			if err := handDown(node); err != nil {
				return err
			}
		}
	}
	return nil
}

// handDown enables in dir's cgroup.subtree_control the controllers the
// kubelet needs and those of v2Optional that dir has.
func handDown(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	have := strings.Fields(string(data))
	var enable []string
	for _, c := range slices.Concat(v2Controllers, v2Optional) {
		if slices.Contains(have, c) {
			enable = append(enable, "+"+c)
		} else if slices.Contains(v2Controllers, c) {
			return fmt.Errorf("cgroup %s has controllers %q: the kubelet needs %s", dir, strings.Join(have, " "), c)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: enable %v: %w", dir, enable, err)
	}
	return nil
}
