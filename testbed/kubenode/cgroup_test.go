package kubenode

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// fakeRoot writes files (path under root: content) into a new folder, a
// machine's file system root as detectCgroups reads it.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, data := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// mountinfo lines of a cgroup v1 machine with systemd's hybrid layout:
// two v1 hierarchies, the unified one beside them (cgroup2, not a v1
// hierarchy) and other file systems.
const v1Mountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
25 22 0:21 / /sys rw,nosuid shared:7 - sysfs sysfs rw
26 25 0:22 / /sys/fs/cgroup ro,nosuid shared:8 - tmpfs tmpfs ro,mode=755
27 26 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw
30 26 0:26 / /sys/fs/cgroup/cpuset rw,nosuid shared:12 - cgroup cgroup rw,cpuset
31 26 0:27 / /sys/fs/cgroup/memory rw,nosuid shared:13 - cgroup cgroup rw,memory
`

// The hierarchy is detected from the machine's files; the node's cgroup
// is made for it (on v2 with the kubelet's controllers handed down,
// checked first on the unified mount); and the kubelet's and
// containerd's configurations are those of the hierarchy: the cgroupfs
// driver on both, failCgroupV1: false on v1 only, runc without systemd.
// Only v1 runs real nodes on this project's machines; v2 is checked
// here, on fake roots.
func TestCgroupsDetectedAndConfigured(t *testing.T) {
	const node = "cairn-node-7"
	for _, c := range []struct {
		name      string
		files     map[string]string
		version   cgroupVersion
		dirs      []string
		detected  string // detectCgroups' error, "" for none
		delegated string // checkDelegated's error
		prepared  string // prepare's error
		// handed is the node cgroup's subtree_control after prepare (v2).
		handed string
	}{
		{
			name: "v2, a systemd machine",
			files: map[string]string{
				"sys/fs/cgroup/cgroup.controllers":              "cpuset cpu io memory hugetlb pids rdma misc\n",
				"sys/fs/cgroup/cgroup.subtree_control":          "cpuset cpu io memory pids\n",
				"sys/fs/cgroup/" + node + "/cgroup.controllers": "cpuset cpu io memory pids\n",
				"proc/self/mountinfo":                           "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n",
			},
			version: cgroupV2, dirs: []string{"sys/fs/cgroup"},
			handed: "+cpu +memory +pids +cpuset +io",
		},
		{
			name: "v2, a container that hands nothing down",
			files: map[string]string{
				"sys/fs/cgroup/cgroup.controllers":     "cpuset cpu io memory pids\n",
				"sys/fs/cgroup/cgroup.subtree_control": "\n",
			},
			version: cgroupV2, dirs: []string{"sys/fs/cgroup"},
			delegated: `hands down "", the kubelet needs [cpu memory pids] too`,
		},
		{
			name: "v2, the node's cgroup without memory",
			files: map[string]string{
				"sys/fs/cgroup/cgroup.controllers":              "cpu memory pids\n",
				"sys/fs/cgroup/cgroup.subtree_control":          "cpu memory pids\n",
				"sys/fs/cgroup/" + node + "/cgroup.controllers": "cpu pids\n",
			},
			version: cgroupV2, dirs: []string{"sys/fs/cgroup"},
			prepared: `has controllers "cpu pids": the kubelet needs memory`,
		},
		{
			name: "v1, hybrid: the unified hierarchy beside the v1 ones",
			files: map[string]string{
				"proc/self/mountinfo":                      v1Mountinfo,
				"sys/fs/cgroup/unified/cgroup.controllers": "",
				"sys/fs/cgroup/cpuset/cpuset.cpus":         "0-1\n",
				"sys/fs/cgroup/cpuset/cpuset.mems":         "0\n",
			},
			version: cgroupV1, dirs: []string{"sys/fs/cgroup/cpuset", "sys/fs/cgroup/memory"},
		},
		{
			name:     "neither",
			files:    map[string]string{"proc/self/mountinfo": "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"},
			detected: "no cgroup hierarchy",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fakeRoot(t, c.files)
			cg, err := detectCgroups(root)
			if !matches(err, c.detected) {
				t.Fatalf("detect: %v, want %q", err, c.detected)
			}
			if c.detected != "" {
				return
			}
			var dirs []string
			for _, d := range cg.dirs {
				rel, _ := filepath.Rel(root, d)
				dirs = append(dirs, rel)
			}
			if cg.version != c.version || !slices.Equal(dirs, c.dirs) {
				t.Fatalf("detected %s in %v, want %s in %v", cg.version, dirs, c.version, c.dirs)
			}
			if err := cg.checkDelegated(); !matches(err, c.delegated) {
				t.Fatalf("checkDelegated: %v, want %q", err, c.delegated)
			}
			if c.delegated != "" {
				return
			}
			if err := cg.prepare(node); !matches(err, c.prepared) {
				t.Fatalf("prepare: %v, want %q", err, c.prepared)
			}
			if c.prepared != "" {
				return
			}
			for _, d := range cg.dirs {
				if _, err := os.Stat(filepath.Join(d, node, "system")); err != nil {
					t.Errorf("the node's system cgroup: %v", err)
				}
			}
			switch c.version {
			case cgroupV2:
				got, err := os.ReadFile(filepath.Join(cg.dirs[0], node, "cgroup.subtree_control"))
				if err != nil || string(got) != c.handed {
					t.Errorf("the node's cgroup hands down %q (%v), want %q", got, err, c.handed)
				}
			case cgroupV1:
				got, err := os.ReadFile(filepath.Join(root, "sys/fs/cgroup/cpuset", node, "system", "cpuset.cpus"))
				if err != nil || string(got) != "0-1\n" {
					t.Errorf("the node's cpuset has CPUs %q (%v), want its parent's", got, err)
				}
			}
			kubeletFor(t, cg.version, node)
			containerdFor(t)
		})
	}
}

// matches reports whether err says want, or is nil when want is "".
func matches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}

// kubeletFor checks the kubelet's configuration on hierarchy v.
func kubeletFor(t *testing.T, v cgroupVersion, node string) {
	t.Helper()
	var cfg map[string]any
	data := kubeletYAML(v, node, "/run/c.sock", "10.250.7.2", "10.251.7.10", "/tmp/resolv.conf", "/tmp/pod-logs")
	if err := yaml.UnmarshalStrict([]byte(data), &cfg); err != nil {
		t.Fatalf("kubelet config: %v\n%s", err, data)
	}
	if cfg["kind"] != "KubeletConfiguration" || cfg["cgroupDriver"] != "cgroupfs" || cfg["cgroupRoot"] != "/"+node {
		t.Errorf("kubelet config %v: want the cgroupfs driver under /%s", cfg, node)
	}
	fail, set := cfg["failCgroupV1"]
	switch {
	case v == cgroupV1 && (!set || fail != false):
		t.Errorf("cgroup v1: failCgroupV1 %v (set %v), want false: the kubelet refuses v1 otherwise", fail, set)
	case v == cgroupV2 && set:
		t.Errorf("cgroup v2: failCgroupV1 %v set, want it left out", fail)
	}
	if strings.Contains(data, "%!") {
		t.Errorf("kubelet config has a formatting error:\n%s", data)
	}
}

// containerdFor checks that containerd's runc manages cgroups as files,
// as the kubelet's cgroupfs driver does: SystemdCgroup = false in the
// runc runtime's options.
func containerdFor(t *testing.T) {
	t.Helper()
	data := containerdTOML("/tmp/c", "/run/c.sock", "/tmp/cni")
	section := ""
	var systemd []string
	for line := range strings.Lines(data) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "SystemdCgroup" {
			systemd = append(systemd, section+" "+strings.TrimSpace(v))
		}
	}
	want := []string{`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options] false`}
	if !slices.Equal(systemd, want) || strings.Contains(data, "%!") {
		t.Errorf("containerd config sets SystemdCgroup %v, want %v:\n%s", systemd, want, data)
	}
}
