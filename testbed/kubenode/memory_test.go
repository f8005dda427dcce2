package kubenode

import (
	"path/filepath"
	"testing"
)

// A container's memory cgroup is found under the node's cgroup by its
// pod's UID and its id, whatever the QoS folders between, and its limit
// and OOM kill counter read on cgroup v1 and v2; a missing cgroup or
// counter is an error naming it, never zero kills.
func TestContainerMemory(t *testing.T) {
	const node, uid, id = "cairn-node-3", "0b6f-uid", "c0ffee"
	v1OOM := "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
	v2Events := "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\noom_group_kill 0\n"
	for _, c := range []struct {
		name    string
		version cgroupVersion
		dirs    []string
		files   map[string]string
		want    ContainerMemory // Cgroup relative to the root
		err     string
	}{
		{
			name: "v1, burstable", version: cgroupV1, dirs: []string{"sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/memory"},
			files: map[string]string{
				"sys/fs/cgroup/memory/" + node + "/kubepods/burstable/pod" + uid + "/" + id + "/memory.limit_in_bytes": "1073741824\n",
				"sys/fs/cgroup/memory/" + node + "/kubepods/burstable/pod" + uid + "/" + id + "/memory.oom_control":    v1OOM,
				// The pod's sandbox, a folder of another id.
				"sys/fs/cgroup/memory/" + node + "/kubepods/burstable/pod" + uid + "/sandbox/memory.oom_control": "oom_kill 7\n",
			},
			want: ContainerMemory{Cgroup: "sys/fs/cgroup/memory/" + node + "/kubepods/burstable/pod" + uid + "/" + id, Limit: 1 << 30, OOMKills: 2},
		},
		{
			name: "v2, guaranteed", version: cgroupV2, dirs: []string{"sys/fs/cgroup"},
			files: map[string]string{
				"sys/fs/cgroup/" + node + "/kubepods/pod" + uid + "/" + id + "/memory.max":    "536870912\n",
				"sys/fs/cgroup/" + node + "/kubepods/pod" + uid + "/" + id + "/memory.events": v2Events,
			},
			want: ContainerMemory{Cgroup: "sys/fs/cgroup/" + node + "/kubepods/pod" + uid + "/" + id, Limit: 512 << 20, OOMKills: 1},
		},
		{
			name: "v2, no limit", version: cgroupV2, dirs: []string{"sys/fs/cgroup"},
			files: map[string]string{
				"sys/fs/cgroup/" + node + "/kubepods/besteffort/pod" + uid + "/" + id + "/memory.max":    "max\n",
				"sys/fs/cgroup/" + node + "/kubepods/besteffort/pod" + uid + "/" + id + "/memory.events": v2Events,
			},
			want: ContainerMemory{Cgroup: "sys/fs/cgroup/" + node + "/kubepods/besteffort/pod" + uid + "/" + id, Limit: -1, OOMKills: 1},
		},
		{
			name: "v1, a kernel without the counter", version: cgroupV1, dirs: []string{"sys/fs/cgroup/memory"},
			files: map[string]string{
				"sys/fs/cgroup/memory/" + node + "/kubepods/pod" + uid + "/" + id + "/memory.limit_in_bytes": "1073741824\n",
				"sys/fs/cgroup/memory/" + node + "/kubepods/pod" + uid + "/" + id + "/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\n",
			},
			err: "no oom_kill counter",
		},
		{
			name: "v1, the container's folder under another pod", version: cgroupV1, dirs: []string{"sys/fs/cgroup/memory"},
			files: map[string]string{
				"sys/fs/cgroup/memory/" + node + "/kubepods/podother/" + id + "/memory.oom_control": v1OOM,
			},
			err: "no cgroup of container " + id + " of pod " + uid,
		},
		{
			name: "v1, no memory hierarchy", version: cgroupV1, dirs: []string{"sys/fs/cgroup/cpuset"},
			files: map[string]string{"sys/fs/cgroup/cpuset/cpuset.cpus": "0-1\n"},
			err:   "no cgroup v1 hierarchy of the memory controller",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fakeRoot(t, c.files)
			cg := cgroups{version: c.version}
			for _, d := range c.dirs {
				cg.dirs = append(cg.dirs, filepath.Join(root, d))
			}
			got, err := containerMemory(cg, node, uid, id)
			if !matches(err, c.err) {
				t.Fatalf("containerMemory: %v, want %q", err, c.err)
			}
			if c.err != "" {
				return
			}
			got.Cgroup, _ = filepath.Rel(root, got.Cgroup)
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
