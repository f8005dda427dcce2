package kubenode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContainerMemory is what the kernel says of a pod's container's memory
// cgroup, the one the kubelet made for it under the node's cgroup.
type ContainerMemory struct {
	// Cgroup is the container's memory cgroup folder.
	Cgroup string
	// Limit is its limit in bytes: memory.limit_in_bytes on cgroup v1,
	// memory.max on v2; -1 when it has none.
	Limit int64
	// OOMKills counts the processes of the container the kernel's OOM
	// killer killed: oom_kill of memory.oom_control on v1, of
	// memory.events on v2. The kernel counts a kill on the victim's own
	// cgroup, whichever cgroup's limit was hit.
	OOMKills int64
}

// ContainerMemory reads the memory cgroup of a pod's running container
// on its node (cgroupfs driver: <node cgroup>/kubepods[/<qos>]/pod<uid>/
// <container id>, in the memory hierarchy on v1, the unified one on v2).
func (c *Cluster) ContainerMemory(t testing.TB, namespace, pod, container string) (ContainerMemory, error) {
	t.Helper()
	p, err := c.Client(t).CoreV1().Pods(namespace).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		return ContainerMemory{}, err
	}
	n := c.nodeOfPod(t, p)
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != container {
			continue
		}
		id, ok := strings.CutPrefix(s.ContainerID, "containerd://")
		if !ok || s.State.Running == nil {
			return ContainerMemory{}, fmt.Errorf("container %s of %s/%s is not running (%q)", container, namespace, pod, s.ContainerID)
		}
		cg, err := machineCgroups()
		if err != nil {
			return ContainerMemory{}, err
		}
		return containerMemory(cg, n.slot.cgroup(), string(p.UID), id)
	}
	return ContainerMemory{}, fmt.Errorf("pod %s/%s has no container %s", namespace, pod, container)
}

// containerMemory reads the memory cgroup of container id of the pod of
// uid under the node's cgroup node, on the machine's cgroups cg.
func containerMemory(cg cgroups, node, uid, id string) (ContainerMemory, error) {
	hier, err := memoryHierarchy(cg)
	if err != nil {
		return ContainerMemory{}, err
	}
	dir, err := findContainerCgroup(filepath.Join(hier, node), uid, id)
	if err != nil {
		return ContainerMemory{}, err
	}
	limitFile, eventsFile := "memory.limit_in_bytes", "memory.oom_control"
	if cg.version == cgroupV2 {
		limitFile, eventsFile = "memory.max", "memory.events"
	}
	m := ContainerMemory{Cgroup: dir}
	data, err := os.ReadFile(filepath.Join(dir, limitFile))
	if err != nil {
		return ContainerMemory{}, fmt.Errorf("memory limit: %w", err)
	}
	if m.Limit, err = parseLimit(strings.TrimSpace(string(data))); err != nil {
		return ContainerMemory{}, fmt.Errorf("%s: %w", filepath.Join(dir, limitFile), err)
	}
	data, err = os.ReadFile(filepath.Join(dir, eventsFile))
	if err != nil {
		return ContainerMemory{}, fmt.Errorf("OOM kills: %w", err)
	}
	if m.OOMKills, err = oomKills(string(data)); err != nil {
		return ContainerMemory{}, fmt.Errorf("%s: %w", filepath.Join(dir, eventsFile), err)
	}
	return m, nil
}

// memoryHierarchy is the folder of the memory controller: on v1 the
// hierarchy mounted with it (its folder named after its controllers,
// "memory" as on these machines), on v2 the unified mount.
func memoryHierarchy(cg cgroups) (string, error) {
	if cg.version == cgroupV2 {
		return cg.dirs[0], nil
	}
	for _, d := range cg.dirs {
		for _, c := range strings.Split(filepath.Base(d), ",") {
			if c == "memory" {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("no cgroup v1 hierarchy of the memory controller among %v", cg.dirs)
}

// findContainerCgroup finds, under the node's cgroup folder, the folder
// id whose parent is pod<uid> (the kubelet's cgroupfs names; the QoS
// class decides the folders between).
func findContainerCgroup(node, uid, id string) (string, error) {
	var found string
	errFound := errors.New("found")
	err := filepath.WalkDir(node, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == id && filepath.Base(filepath.Dir(p)) == "pod"+uid {
			found = p
			return errFound
		}
		return nil
	})
	if found != "" {
		return found, nil
	}
	if err != nil && !errors.Is(err, errFound) {
		return "", fmt.Errorf("find the cgroup of container %s: %w", id, err)
	}
	return "", fmt.Errorf("no cgroup of container %s of pod %s under %s", id, uid, node)
}

// parseLimit reads a memory limit: bytes, or v2's "max" (-1). v1's
// "no limit" is a huge number, kept as it is.
func parseLimit(s string) (int64, error) {
	if s == "max" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q: %w", s, err)
	}
	return n, nil
}

// oomKills reads the oom_kill counter of memory.oom_control (v1) or
// memory.events (v2): "key value" lines. A kernel without it (v1 before
// Linux 4.13) is an error, not zero kills.
func oomKills(data string) (int64, error) {
	for line := range strings.Lines(data) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "oom_kill" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("oom_kill %q: %w", f[1], err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no oom_kill counter in %q", data)
}
