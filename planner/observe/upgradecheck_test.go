package observe

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/testbed"
)

// The pre-flight check Job as a real API server has it: running, passed,
// and refused with pg_upgrade's reason from its pod's termination
// message; a cluster without one has none.
func TestObserveUpgradeCheck(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	c := cp.Client(t)
	ctx := context.Background()
	ns := cp.Namespace(t, "db")
	obs := &Observer{Client: c, Namespace: ns, Kinds: []Kind{Postgres()}}
	if u, err := obs.upgradeCheck(ctx, ns, "pg"); err != nil || u != nil {
		t.Fatalf("no Job: %+v, %v", u, err)
	}
	job := checkJob(t, c, ns, "pg", 14, 15)
	want := &live.UpgradeCheck{From: 14, To: 15, StorageLocation: "s3://b/pg", Scratch: "10Gi",
		Images: map[string]string{"install-cairn": "cairn:dev", contract.PGUpgradeCheckContainer: "upgrade:14-to-15"}}
	observe := func(what string, result, reason string) {
		t.Helper()
		u, err := obs.upgradeCheck(ctx, ns, "pg")
		if err != nil {
			t.Fatal(err)
		}
		w := *want
		w.Result = result
		if u == nil || u.From != w.From || u.To != w.To || u.StorageLocation != w.StorageLocation || u.Scratch != w.Scratch || u.Result != w.Result || len(u.Images) != 2 ||
			!strings.Contains(u.Reason, reason) || (reason == "") != (u.Reason == "") {
			t.Fatalf("%s: observed %+v, want %+v with reason %q", what, u, w, reason)
		}
	}
	observe("running", "", "")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x1", Labels: job.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID}}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: contract.PGUpgradeCheckContainer, Image: "upgrade:14-to-15"}}}}
	pod, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refusal := "pg_upgrade --check refused the upgrade from 14 to 15: Checking for reg* data types in user tables fatal"
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: contract.PGUpgradeCheckContainer, Image: "upgrade:14-to-15",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: refusal}}}}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	job.Status = batchv1.JobStatus{StartTime: &now, Failed: 1, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now}}}
	if _, err := c.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	observe("refused", live.UpgradeCheckFailed, refusal)

	// A Job that passed, of another cluster's name prefix, is not pg's.
	other := checkJob(t, c, ns, "pg2", 14, 15)
	other.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	if _, err := c.BatchV1().Jobs(ns).UpdateStatus(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	observe("another cluster's passed", live.UpgradeCheckFailed, refusal)
	u, err := obs.upgradeCheck(ctx, ns, "pg2")
	if err != nil || u == nil || u.Result != live.UpgradeCheckPassed || u.Reason != "" {
		t.Fatalf("pg2's passed check: %+v, %v", u, err)
	}
}

// The scratch volume as each cairn rendered it: an emptyDir on the
// node's disk (before), a claim of its own with or without a class
// (now); observed as rendered, so a Job is rendered again as it runs.
func TestObserveUpgradeCheckScratch(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	c := cp.Client(t)
	ctx := context.Background()
	ns := cp.Namespace(t, "db")
	obs := &Observer{Client: c, Namespace: ns, Kinds: []Kind{Postgres()}}
	claim := func(size, class string) corev1.VolumeSource {
		spec := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}
		if class != "" {
			spec.StorageClassName = ptr(class)
		}
		return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: spec}}}
	}
	for i, tc := range []struct {
		name    string
		scratch corev1.VolumeSource
		want    live.UpgradeCheck
	}{
		{"emptyDir", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("10Gi"))}}, live.UpgradeCheck{Scratch: "10Gi"}},
		{"emptyDir without a size", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, live.UpgradeCheck{}},
		{"claim of a class", claim("20Gi", "fast-ssd"), live.UpgradeCheck{Scratch: "20Gi", ScratchClaim: true, ScratchClass: "fast-ssd"}},
		{"claim of the default class", claim("100Gi", ""), live.UpgradeCheck{Scratch: "100Gi", ScratchClaim: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := fmt.Sprintf("scratch%d", i)
			checkJobWith(t, c, ns, cluster, 14, 15, tc.scratch)
			u, err := obs.upgradeCheck(ctx, ns, cluster)
			if err != nil || u == nil {
				t.Fatalf("observed %+v, %v", u, err)
			}
			if u.Scratch != tc.want.Scratch || u.ScratchClaim != tc.want.ScratchClaim || u.ScratchClass != tc.want.ScratchClass {
				t.Errorf("scratch observed as %q, claim %v, class %q; want %q, %v, %q",
					u.Scratch, u.ScratchClaim, u.ScratchClass, tc.want.Scratch, tc.want.ScratchClaim, tc.want.ScratchClass)
			}
		})
	}
}

// checkJob creates a check Job as the renderer renders it, in short.
func checkJob(t *testing.T, c kubernetes.Interface, ns, cluster string, from, to int) *batchv1.Job {
	t.Helper()
	scratch := resource.MustParse("10Gi")
	return checkJobWith(t, c, ns, cluster, from, to, corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &scratch}})
}

// checkJobWith is checkJob with the scratch volume given.
func checkJobWith(t *testing.T, c kubernetes.Interface, ns, cluster string, from, to int, scratch corev1.VolumeSource) *batchv1.Job {
	t.Helper()
	labels := map[string]string{contract.LabelName: contract.AppUpgradeCheck, contract.LabelInstance: cluster,
		contract.LabelUpgradeFrom: "14", contract.LabelUpgradeTo: "15"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: contract.PGUpgradeCheckJob(cluster, from, to), Labels: labels},
		Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				InitContainers: []corev1.Container{{Name: "install-cairn", Image: "cairn:dev"}},
				Containers: []corev1.Container{{Name: contract.PGUpgradeCheckContainer, Image: "upgrade:14-to-15",
					Command: []string{"/cairn-bin/cairn", "instance", "pg-upgrade-check", "--from", "14", "--to", "15", "--location", "s3://b/pg"}}},
				Volumes: []corev1.Volume{{Name: contract.PGUpgradeCheckScratchVolume, VolumeSource: scratch}}}}}}
	job, err := c.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}
