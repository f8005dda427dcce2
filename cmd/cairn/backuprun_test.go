package main

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// cairn backup run refuses a cluster that is not there, or whose runtime
// takes no backups, before it writes anything; a request no runtime
// answers ends in one line naming the runtime, what its Lease says and
// what to check, never a client-go error.
func TestBackupRunEdges(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	ns := cp.Namespace(t, "backuprun")
	c := cp.Client(t)
	ctx := context.Background()
	config := func(cluster string, data map[string]string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap(cluster), Namespace: ns}, Data: data}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	policy := map[string]string{contract.KeyBackupSchedule: "0 2 * * *", contract.KeyBackupStorageLocation: "file:///backups"}
	config("plain", map[string]string{})
	config("badpolicy", map[string]string{contract.KeyBackupSchedule: "every day", contract.KeyBackupStorageLocation: "file:///backups"})
	for _, cl := range []string{"nolease", "stale", "busy"} {
		config(cl, policy)
	}
	lease := func(cluster, holder string, renewed time.Time) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: contract.Runtime(cluster), Namespace: ns},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: renewed}}}
		if _, err := c.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lease("stale", "stale-runtime-7d9f-x", time.Now().Add(-time.Hour))
	// Renewed "in the future": held at whatever time the test runs.
	lease("busy", "busy-runtime-7d9f-y", time.Now().Add(24*time.Hour))

	kc := cp.Kubeconfig(t)
	for _, tc := range []struct {
		name, cluster string
		want          []string // substrings of the error line
		asked         bool     // the request was written
	}{
		{"no such cluster", "nosuch-db", []string{"no cluster nosuch-db in namespace " + ns, "ConfigMap nosuch-db-cairn", "--namespace"}, false},
		{"no backup policy", "plain", []string{"plain has no backup policy", "takes no backups"}, false},
		{"a policy that does not parse", "badpolicy", []string{"the backup policy of badpolicy in ConfigMap " + ns + "/badpolicy-cairn"}, false},
		{"no runtime ever led", "nolease", []string{"backup of nolease: no outcome after 2s", "no replica of its runtime " + ns + "/nolease-runtime has ever led",
			"kubectl -n " + ns + " logs deployment/nolease-runtime", "the request stays"}, true},
		{"the runtime's Lease expired", "stale", []string{"no replica of its runtime " + ns + "/stale-runtime leads (its Lease was last renewed 1h0m", "kubectl -n " + ns + " get deployment stale-runtime"}, true},
		{"the runtime leads but does not answer", "busy", []string{"its runtime " + ns + "/busy-runtime leads (pod busy-runtime-7d9f-y)", "kubectl -n " + ns + " logs busy-runtime-7d9f-y"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := cairn(t, "backup", "run", tc.cluster, "--kubeconfig", kc, "--namespace", ns, "--wait", "2s")
			if code != exitInvalid {
				t.Fatalf("exit %d, want %d\n%s", code, exitInvalid, errOut)
			}
			// The error is the last line; progress lines come before it.
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			errLine := lines[len(lines)-1]
			for _, w := range tc.want {
				if !strings.Contains(errLine, w) {
					t.Errorf("the error line lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "rate limiter") || strings.Contains(errOut, "context deadline") {
				t.Errorf("a client-go error shows:\n%s", errOut)
			}
			cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, contract.StatusConfigMap(tc.cluster), metav1.GetOptions{})
			switch {
			case tc.asked && err != nil:
				t.Errorf("the request was not written: %v", err)
			case tc.asked && !strings.HasPrefix(cm.Annotations[contract.AnnotationBackupRequest], "manual-"):
				t.Errorf("the request was not written: %v", cm.Annotations)
			case !tc.asked && !apierrors.IsNotFound(err):
				t.Errorf("%s was written (err %v)", contract.StatusConfigMap(tc.cluster), err)
			}
		})
	}
}
