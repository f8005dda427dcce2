package renderer

import (
	"fmt"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
)

// The pre-flight check Job's bounds: what one restore, one single-user
// recovery and pg_upgrade's short-lived servers need (their shared
// buffers are held small whatever the cluster's config says), and a
// deadline after which a check that hangs fails rather than holding the
// upgrade silently.
const (
	upgradeCheckCPU      = "250m"
	upgradeCheckMemory   = "512Mi"
	upgradeCheckMemLimit = "1Gi"
	upgradeCheckDeadline = 6 * 60 * 60
)

// pgUpgradeCheckJob is a major upgrade's pre-flight check: a Job that
// runs `cairn instance pg-upgrade-check` in the upgrade's pg_upgrade
// image, with cairn's binary copied in as the members' pods do. It
// restores the newest base backup (with the backup store's credentials,
// as a restore does) into its scratch volume and never reaches a member.
// The scratch volume is a claim of its own (a generic ephemeral volume:
// created with the Job's pod, deleted with it), of the members' class
// and sized as a member's volume when the step rendered it: the restored
// copy can be no larger than the member it was taken from, and it lands
// on provisioned storage, never on the node's own disk, where a copy of
// a large cluster would fill the disk and get the node's pods evicted. It is tried
// once (backoffLimit 0): a refusal is an answer, not a fault to retry.
// It has no TTL: the manifests hold it, so Argo CD or Flux would create
// it anew the moment Kubernetes removed it; the major upgrade's step
// removes it instead. Its pod carries none of the members' selector
// labels.
//
// Its pod template is rendered from u alone and cairn's own labels (not
// the spec's): a Job's template cannot change, so a later step that
// renders it again must render it as it runs.
func pgUpgradeCheckJob(n names, u plan.UpgradeCheckJob, o Options) (Object, error) {
	// Observed without a size (not as cairn renders it), it stays so.
	var size *resource.Quantity
	if u.Scratch != "" {
		q, err := resource.ParseQuantity(u.Scratch)
		if err != nil {
			return Object{}, fmt.Errorf("upgrade check scratch volume: %w", err)
		}
		size = &q
	}
	if u.ScratchClaim && size == nil {
		return Object{}, fmt.Errorf("upgrade check scratch volume: a claim needs a size")
	}
	podLabels := map[string]string{
		contract.LabelName: contract.AppUpgradeCheck, contract.LabelInstance: n.cluster,
		contract.LabelComponent: contract.ComponentUpgradeCheck, contract.LabelManagedBy: contract.ManagedByCairn,
		contract.LabelUpgradeFrom: strconv.Itoa(u.From), contract.LabelUpgradeTo: strconv.Itoa(u.To),
	}
	labels := maps.Clone(n.labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, podLabels)
	sc := restricted()
	sc.ReadOnlyRootFilesystem = ptr(true)
	install := installContainer(o)
	install.SecurityContext = sc
	job := &batchv1.Job{
		TypeMeta:   typeMeta("batch/v1", "Job"),
		ObjectMeta: metav1.ObjectMeta{Name: contract.PGUpgradeCheckJob(n.cluster, u.From, u.To), Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr(int32(0)),
			ActiveDeadlineSeconds: ptr(int64(upgradeCheckDeadline)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					InitContainers:               []corev1.Container{install},
					Containers:                   []corev1.Container{pgUpgradeCheckContainer(n, u, o, sc)},
					AutomountServiceAccountToken: ptr(false),
					SecurityContext:              podSecurity(pgUID),
					Volumes:                      pgUpgradeCheckVolumes(n, u, size, podLabels),
				},
			},
		},
	}
	for _, cs := range [][]corev1.Container{job.Spec.Template.Spec.InitContainers, job.Spec.Template.Spec.Containers} {
		for i := range cs {
			if img := u.Images[cs[i].Name]; img != "" {
				cs[i].Image = img
			}
		}
	}
	return Object{File: fmt.Sprintf("upgrade-check-%d-to-%d-job.yaml", u.From, u.To), Obj: job}, nil
}

// upgradeCheckScratch is the Job's scratch volume.
var upgradeCheckScratch = writableDir{contract.PGUpgradeCheckScratchVolume, contract.PGUpgradeCheckWorkDir}

// pgUpgradeCheckContainer runs the check, bounded, under a read-only
// root filesystem; a refusal is its termination message.
func pgUpgradeCheckContainer(n names, u plan.UpgradeCheckJob, o Options, sc *corev1.SecurityContext) corev1.Container {
	return corev1.Container{
		Name:  contract.PGUpgradeCheckContainer,
		Image: o.PostgresUpgradeImage(u.From, u.To),
		Command: []string{cairnBin, "instance", "pg-upgrade-check", "--from", strconv.Itoa(u.From), "--to", strconv.Itoa(u.To),
			"--location", u.StorageLocation, "--pg-config", pgConfDir, "--work", upgradeCheckScratch.path},
		Env:     podEnv(n),
		EnvFrom: backupCredentials(n),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(upgradeCheckCPU), corev1.ResourceMemory: resource.MustParse(upgradeCheckMemory)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(upgradeCheckMemLimit)},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: upgradeCheckScratch.volume, MountPath: upgradeCheckScratch.path},
			{Name: "postgres-config", MountPath: pgConfDir, ReadOnly: true},
			{Name: "cairn-bin", MountPath: cairnBinDir, ReadOnly: true},
			{Name: tmpDir.volume, MountPath: tmpDir.path},
			{Name: pgSocketDir.volume, MountPath: pgSocketDir.path},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          sc,
	}
}

// pgUpgradeCheckVolumes: cairn's binary, the rendered PostgreSQL config,
// the scratch volume and the writable folders.
func pgUpgradeCheckVolumes(n names, u plan.UpgradeCheckJob, size *resource.Quantity, labels map[string]string) []corev1.Volume {
	return []corev1.Volume{
		{Name: "cairn-bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "postgres-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: contract.PostgresConfig(n.cluster)}}}},
		{Name: upgradeCheckScratch.volume, VolumeSource: upgradeCheckScratchSource(u, size, labels)},
		{Name: tmpDir.volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: pgSocketDir.volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
}

// upgradeCheckScratchSource is the scratch volume: a claim of its own
// (u.ScratchClaim), as a member's data volume is claimed, or, as an older
// cairn rendered it and a Job it made still runs, an emptyDir on the
// node's disk (size nil: no limit). The claim carries the pod's labels,
// so a person sees whose it is.
func upgradeCheckScratchSource(u plan.UpgradeCheckJob, size *resource.Quantity, labels map[string]string) corev1.VolumeSource {
	if !u.ScratchClaim {
		return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: size}}
	}
	return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       volumeClaimSpec(size.String(), u.ScratchClass)}}}
}
