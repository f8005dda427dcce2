package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// --pod-monitor writes each cluster's monitoring folder beside its tree,
// never into what the cluster's entry point syncs; its labels need it.
func TestRenderPodMonitorFlag(t *testing.T) {
	repo := t.TempDir()
	if out, err := exec.Command("cp", "-r", "../../examples/fleet/.", repo).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	live := filepath.Join(repo, "live.yaml")
	render := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"render", "--repo", repo, "--live", live}, args...), &out, &errb)
		return code, errb.String()
	}
	entry := filepath.Join(repo, "rendered", "my-production-db", "kustomization.yaml")
	monitoring := filepath.Join(repo, "rendered", "my-production-db", "monitoring")

	if code, errs := render(); code != exitOK {
		t.Fatalf("render: %d %s", code, errs)
	}
	withoutEntry, _ := os.ReadFile(entry)
	if _, err := os.Stat(monitoring); !os.IsNotExist(err) {
		t.Fatalf("without --pod-monitor: %v", err)
	}
	if code, errs := render("--pod-monitor", "--pod-monitor-label", "release=prometheus"); code != exitOK {
		t.Fatalf("render --pod-monitor: %d %s", code, errs)
	}
	pm, err := os.ReadFile(filepath.Join(monitoring, "runtime-podmonitor.yaml"))
	if err != nil || !strings.Contains(string(pm), "kind: PodMonitor") || !strings.Contains(string(pm), "release: prometheus") {
		t.Fatalf("the PodMonitor: %v\n%s", err, pm)
	}
	if withEntry, _ := os.ReadFile(entry); !bytes.Equal(withEntry, withoutEntry) {
		t.Errorf("--pod-monitor changed the entry point the cluster syncs:\n%s", withEntry)
	}
	if code, errs := render("--pod-monitor-label", "release=prometheus"); code != exitUsage || !strings.Contains(errs, "PodMonitor is not rendered") {
		t.Errorf("labels without --pod-monitor: %d %s", code, errs)
	}
}
