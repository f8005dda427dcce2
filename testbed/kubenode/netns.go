package kubenode

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ip runs iproute2's ip with args.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// makeNetwork makes the node's network namespace, links it to the
// machine with a veth pair, and routes the node's pod range into it.
func makeNetwork(s slot) error {
	ns := s.netns()
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", s.hostLink(), "type", "veth", "peer", "name", s.nodeLink(), "netns", ns},
		{"addr", "add", s.hostIP() + "/30", "dev", s.hostLink()},
		{"link", "set", s.hostLink(), "up"},
		{"-n", ns, "addr", "add", s.nodeIP() + "/30", "dev", s.nodeLink()},
		{"-n", ns, "link", "set", s.nodeLink(), "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", s.hostIP()},
		{"route", "add", s.podCIDR(), "via", s.nodeIP()},
	}
	for _, st := range steps {
		if err := ip(st...); err != nil {
			return err
		}
	}
	// The node forwards between its pods' bridge and the machine, and
	// kube-proxy's rules see bridged traffic, as on any node.
	for _, k := range []string{"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables"} {
		if err := inNetns(s, "sh", "-c", "echo 1 > /proc/sys/"+k); err != nil && k == "net/ipv4/ip_forward" {
			return err
		}
	}
	return nil
}

// makeLAN makes the network between a cluster's nodes: a bridge in a
// network namespace of its own (named after the cluster's first slot,
// lan), as a switch the nodes are plugged into. The machine itself does
// not forward between the nodes' links (ip_forward stays as it is, so no
// pod's packet can leave the machine through it).
func makeLAN(lan slot) error {
	ns := lan.lanNetns()
	for _, st := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "add", "br0", "type", "bridge"},
		{"-n", ns, "link", "set", "br0", "up"},
	} {
		if err := ip(st...); err != nil {
			return err
		}
	}
	return nil
}

// joinLAN plugs node s into the LAN of slot lan: a veth pair, "lan" in
// the node's namespace with the node's LAN address, its peer a port of
// the bridge.
func joinLAN(lan, s slot) error {
	ns := s.netns()
	for _, st := range [][]string{
		{"link", "add", "lan", "netns", ns, "type", "veth", "peer", "name", s.lanPort(), "netns", lan.lanNetns()},
		{"-n", lan.lanNetns(), "link", "set", s.lanPort(), "master", "br0"},
		{"-n", lan.lanNetns(), "link", "set", s.lanPort(), "up"},
		{"-n", ns, "addr", "add", s.lanIP() + "/16", "dev", "lan"},
		{"-n", ns, "link", "set", "lan", "up"},
	} {
		if err := ip(st...); err != nil {
			return err
		}
	}
	return nil
}

// routeTo routes, in node from's namespace, node to's pod range and
// address through the LAN: pod to pod across nodes, as a cluster's
// network plugin does with host routes.
func routeTo(from, to slot) error {
	ns := from.netns()
	for _, dst := range []string{to.podCIDR(), to.nodeIP() + "/32"} {
		if err := ip("-n", ns, "route", "add", dst, "via", to.lanIP(), "dev", "lan"); err != nil {
			return err
		}
	}
	return nil
}

// cutNetwork takes node s off every network it is on: its link to the
// machine and its LAN port go down on the node's side, as when a host
// loses power. Routes to it stay, so packets to it go unanswered, and
// nothing refuses them.
func cutNetwork(s slot, lan bool) error {
	links := []string{s.nodeLink()}
	if lan {
		links = append(links, "lan")
	}
	for _, l := range links {
		if err := ip("-n", s.netns(), "link", "set", l, "down"); err != nil {
			return err
		}
	}
	return nil
}

// inNetns runs a command in the node's network namespace.
func inNetns(s slot, name string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", s.netns(), name}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), s.netns(), err, bytes.TrimSpace(out))
	}
	return nil
}

// cgroupHierarchies are the folders the node's cgroup is made in: every
// cgroup v1 hierarchy mounted on the machine, or the unified mount on
// cgroup v2 (cgroup.go).
func cgroupHierarchies() ([]string, error) {
	cg, err := machineCgroups()
	return cg.dirs, err
}

// makeCgroups makes the node's cgroup (the kubelet's cgroupRoot) and its
// system child on the machine's cgroups (cgroups.prepare).
func makeCgroups(s slot) error {
	cg, err := machineCgroups()
	if err != nil {
		return err
	}
	return cg.prepare(s.cgroup())
}

// cgroupProcs are the processes in the node's cgroups, in any hierarchy.
func cgroupProcs(s slot) []int {
	hs, _ := cgroupHierarchies()
	seen := map[int]bool{}
	var pids []int
	for _, h := range hs {
		_ = filepath.WalkDir(filepath.Join(h, s.cgroup()), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// cleanSlot takes down whatever a node of slot s left: its processes and
// containers (everything in its cgroups), the mounts under its root
// folder, its pods' network namespaces, its own network namespace and its
// link to the machine (and with them its routes), the LAN of the cluster
// it was the first node of, its cgroups and its root folder (named in
// the file "root" of dir, the slot's folder or what it was renamed to).
// Each part is done even when another fails; it is for cleaning up, so it
// reports nothing.
func cleanSlot(s slot, dir string) {
	_ = killProcs(s)
	root, err := os.ReadFile(filepath.Join(dir, "root"))
	if err == nil && len(root) > 0 {
		unmountUnder(string(root))
	}
	removePodNetns(s)
	_ = ip("netns", "del", s.netns())
	// A namespace outlives its name while sockets of its killed processes
	// are still closing (a stopped node's, which no peer answers, for
	// minutes); its link to the machine goes now, and with it the
	// machine's routes through it.
	if _, err := os.Stat(filepath.Join("/sys/class/net", s.hostLink())); err == nil {
		_ = ip("link", "del", s.hostLink())
	}
	// The LAN of the cluster whose first node s was, if it had one.
	if _, err := os.Stat(filepath.Join("/var/run/netns", s.lanNetns())); err == nil {
		_ = ip("netns", "del", s.lanNetns())
	}
	hs, _ := cgroupHierarchies()
	for _, h := range hs {
		removeCgroup(filepath.Join(h, s.cgroup()))
	}
	if len(root) > 0 {
		_ = os.RemoveAll(string(root))
	}
}

// killProcs kills every process in the node's cgroups with SIGKILL, all
// at once, again until none is left (a process may fork meanwhile), for
// at most 5 s.
func killProcs(s slot) error {
	for range 50 {
		pids := cgroupProcs(s)
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if pids := cgroupProcs(s); len(pids) > 0 {
		return fmt.Errorf("node processes %v still run after SIGKILL", pids)
	}
	return nil
}

// unmountUnder unmounts every mount at or below dir, deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// removePodNetns removes the network namespaces containerd made for the
// node's pods (/var/run/netns/cni-*), told from other nodes' by their
// addresses in the node's pod range.
func removePodNetns(s slot) {
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cni-") {
			continue
		}
		out, err := exec.Command("ip", "-n", e.Name(), "-o", "-4", "addr").CombinedOutput()
		if err == nil && strings.Contains(string(out), " "+s.podPrefix()) {
			_ = ip("netns", "del", e.Name())
		}
	}
}

// removeCgroup removes a cgroup and its children, deepest first.
func removeCgroup(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}
