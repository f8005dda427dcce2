package main

import (
	"strings"
	"testing"
)

// A disruptive step outside its spec's maintenance window is held, and
// the plan says when it can go; at the window's opening it goes ahead.
func TestMaintenanceWindowHoldsDisruptiveSteps(t *testing.T) {
	spec := strings.Replace(etcd8, "size: 8", "size: 1\n  maintenanceWindow: {schedule: \"0 22 * * *\", duration: 2h, timeZone: UTC}", 1)
	repo := writeRepo(t, map[string]string{"clusters/big.yaml": spec,
		"live.yaml": "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: big\n  storage: 8Gi\n  network: restricted\n  tls: require\n  compaction: {mode: periodic, retention: 1h, applied: true}\n  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 1, version: \"3.5.20\"}\n  members:\n  - {name: big-0, version: \"3.5.20\", ready: true, role: leader, tls: true, peerTLS: true}\n"})
	args := []string{"plan", "--repo", repo, "--live", repo + "/live.yaml", "-o", "json"}
	_, held, _ := cairn(t, append(args, "--now", "2026-11-30T12:00:00Z")...)
	if !strings.Contains(held, `"verdict": "Hold"`) || !strings.Contains(held, "opens at 2026-11-30 22:00 UTC") {
		t.Fatalf("at noon:\n%s", held)
	}
	_, open, _ := cairn(t, append(args, "--now", "2026-11-30T22:30:00Z")...)
	if !strings.Contains(open, `"verdict": "Allow"`) {
		t.Fatalf("in the window:\n%s", open)
	}
	if code, _, errOut := cairn(t, "plan", "--repo", repo, "--now", "tomorrow"); code != exitUsage || !strings.Contains(errOut, "RFC 3339") {
		t.Errorf("bad --now: exit %d %s", code, errOut)
	}
}

func TestPolicyTestShowsDecisionsFromPolicyFiles(t *testing.T) {
	spec := strings.Replace(etcd8, "size: 8", "size: 1\n  maintenanceWindow: {schedule: \"0 22 * * *\", duration: 2h, timeZone: UTC}", 1)
	repo := writeRepo(t, map[string]string{"clusters/big.yaml": spec,
		"policies/friday.yaml": "apiVersion: cairn.dev/v1alpha1\nkind: Policy\nmetadata: {name: team}\nspec:\n  rules:\n  - name: no-friday\n    expression: 'step.disruptive && now.getDayOfWeek() == 5 ? {\"verdict\": \"hold\", \"message\": \"not on Fridays\"} : {\"verdict\": \"allow\", \"message\": \"\"}'\n",
		"live.yaml":            "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: big\n  storage: 8Gi\n  network: restricted\n  tls: require\n  compaction: {mode: periodic, retention: 1h, applied: true}\n  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 1, version: \"3.5.20\"}\n  members:\n  - {name: big-0, version: \"3.5.20\", ready: true, role: leader, tls: true, peerTLS: true}\n"})
	code, out, errOut := cairn(t, "policy", "test", "--repo", repo, "--live", repo+"/live.yaml", "--now", "2026-11-27T22:30:00Z")
	if code != exitOK || !strings.Contains(out, "team/no-friday") || !strings.Contains(out, "not on Fridays") || !strings.Contains(out, "maintenance-window") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	bad := writeRepo(t, map[string]string{"clusters/big.yaml": spec,
		"policies/bad.yaml": "apiVersion: cairn.dev/v1alpha1\nkind: Policy\nmetadata: {name: bad}\nspec:\n  rules:\n  - name: r\n    expression: 'now + 1'\n"})
	code, _, errOut = cairn(t, "plan", "--repo", bad)
	if code != exitInvalid || !strings.Contains(errOut, "bad.yaml:7:17: spec.rules[0].expression: does not compile") {
		t.Fatalf("a bad rule: exit %d %s", code, errOut)
	}
}
