package observe

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// maxCheckJobs bounds the check Jobs read per cluster: the manifests
// hold at most one.
const maxCheckJobs = 10

// upgradeCheck reads a PostgreSQL cluster's pre-flight check Job (the
// newest, if a person left others), nil when there is none: the majors
// it checks, what it was rendered with, and its outcome, with
// pg_upgrade's refusal from its pod's termination message. It lists the
// Jobs and pods of the check's labels only (list on batch/jobs, and the
// pods observe lists already).
func (o *Observer) upgradeCheck(ctx context.Context, ns, cluster string) (*live.UpgradeCheck, error) {
	sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: map[string]string{
		contract.LabelName: contract.AppUpgradeCheck, contract.LabelInstance: cluster}})
	jobs, err := o.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: maxCheckJobs})
	if err != nil {
		return nil, fmt.Errorf("upgrade check Jobs (cairn needs list on batch/jobs): %w", err)
	}
	var job *batchv1.Job
	var u *live.UpgradeCheck
	for i := range jobs.Items {
		j := &jobs.Items[i]
		// A Job without the majors a check names is none of cairn's.
		if c := checkOf(j); c.From > 0 && c.To > c.From && j.DeletionTimestamp == nil && (job == nil || job.CreationTimestamp.Before(&j.CreationTimestamp)) {
			job, u = j, c
		}
	}
	if job == nil {
		return nil, nil
	}
	if u.Result == live.UpgradeCheckFailed {
		reason, err := o.checkRefusal(ctx, ns, job)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			u.Reason = reason
		}
	}
	return u, nil
}

// checkOf reads what a check Job was rendered with and how it ended.
func checkOf(job *batchv1.Job) *live.UpgradeCheck {
	u := &live.UpgradeCheck{}
	u.From, _ = strconv.Atoi(job.Labels[contract.LabelUpgradeFrom])
	u.To, _ = strconv.Atoi(job.Labels[contract.LabelUpgradeTo])
	pod := job.Spec.Template.Spec
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if u.Images == nil {
			u.Images = map[string]string{}
		}
		u.Images[c.Name] = c.Image
		if i := slices.Index(c.Command, "--location"); c.Name == contract.PGUpgradeCheckContainer && i >= 0 && i+1 < len(c.Command) {
			u.StorageLocation = c.Command[i+1]
		}
	}
	for _, v := range pod.Volumes {
		if v.Name != contract.PGUpgradeCheckScratchVolume {
			continue
		}
		if e := v.EmptyDir; e != nil && e.SizeLimit != nil {
			u.Scratch = e.SizeLimit.String()
		}
		if e := v.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
			claim := e.VolumeClaimTemplate.Spec
			u.ScratchClaim = true
			if q, ok := claim.Resources.Requests[corev1.ResourceStorage]; ok {
				u.Scratch = q.String()
			}
			if claim.StorageClassName != nil {
				u.ScratchClass = *claim.StorageClassName
			}
		}
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			u.Result = live.UpgradeCheckPassed
		case batchv1.JobFailed:
			u.Result, u.Reason = live.UpgradeCheckFailed, clip(fmt.Sprintf("the Job failed: %s: %s", c.Reason, c.Message))
		}
	}
	if u.Result == "" && job.Status.Succeeded > 0 {
		u.Result = live.UpgradeCheckPassed
	}
	return u
}

// checkRefusal is the failed check's termination message: pg_upgrade's
// findings, or the log's tail when the command wrote none.
func (o *Observer) checkRefusal(ctx context.Context, ns string, job *batchv1.Job) (string, error) {
	pods, err := o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: job.Spec.Template.Labels}), Limit: maxCheckJobs})
	if err != nil {
		return "", fmt.Errorf("upgrade check pods: %w", err)
	}
	for _, p := range pods.Items {
		if !slices.ContainsFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == job.UID }) {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; s.Name == contract.PGUpgradeCheckContainer && t != nil && t.ExitCode != 0 && t.Message != "" {
				return clip(t.Message), nil
			}
		}
	}
	return "", nil
}

func clip(s string) string {
	if len(s) > contract.TerminationMessageMax {
		return s[:contract.TerminationMessageMax]
	}
	return s
}
