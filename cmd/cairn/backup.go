package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/backup"
)

func newBackup() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "List a cluster's backups, ask its runtime for one now, or release a pinned one",
	}
	cmd.AddCommand(newBackupList(), newBackupRun(), newBackupRelease(), newBackupWALFetch())
	return cmd
}

// openLocation opens a storageLocation with the S3 settings of the
// environment (CAIRN_S3_ENDPOINT, AWS_REGION, AWS_ACCESS_KEY_ID, ...).
func openLocation(location string) (backup.Store, error) {
	st, err := backup.OpenFromEnv(location)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	return st, nil
}

func newBackupList() *cobra.Command {
	var location string
	var output *outputFlag
	cmd := &cobra.Command{
		Use:   "list CLUSTER --location s3://bucket/prefix|file:///path [-o text|json|yaml]",
		Short: "List a cluster's complete backups, oldest first",
		Long: `List the complete backups of CLUSTER at --location (the spec's
backup.storageLocation). Backups that were cut off or are being written
have no manifest yet and are not listed. PINNED names the TakeBackup step
a pinned backup was taken for: retention keeps it until cairn backup
release. S3 settings come from the
environment: CAIRN_S3_ENDPOINT (or AWS_ENDPOINT_URL_S3), AWS_REGION,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_CA_BUNDLE.`,
		Example: `  cairn backup list my-production-db --location s3://my-backup-bucket/postgres
  CAIRN_S3_ENDPOINT=https://minio.local:9000 cairn backup list my-etcd-cluster --location s3://etcd/backups -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := output.get("cairn backup list")
			if err != nil {
				return err
			}
			if err := spec.CheckName(args[0]); err != nil {
				return &exitError{exitUsage, err}
			}
			st, err := openLocation(location)
			if err != nil {
				return err
			}
			all, err := backup.List(cmd.Context(), st, args[0])
			if err != nil {
				return err
			}
			return printBackups(cmd.OutOrStdout(), all, format)
		},
	}
	cmd.Flags().StringVar(&location, "location", "", "the backups' storageLocation (required)")
	output = addOutput(cmd, formatText, formatJSON, formatYAML)
	_ = cmd.MarkFlagRequired("location")
	return cmd
}

func printBackups(w io.Writer, all []backup.Manifest, format string) error {
	if format != formatText {
		if all == nil {
			all = []backup.Manifest{}
		}
		return writeData(w, format, all)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFINISHED\tSIZE\tSOURCE\tVERSION\tPINNED")
	for _, m := range all {
		pinned := "-"
		if m.Pinned {
			pinned = m.Request
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", m.ID, m.Finished.Format(time.RFC3339), m.Size, m.Source, m.Version, pinned)
	}
	return tw.Flush()
}

func newBackupRelease() *cobra.Command {
	var location string
	cmd := &cobra.Command{
		Use:   "release CLUSTER BACKUP-ID --location s3://bucket/prefix|file:///path",
		Short: "Release a pinned backup: retention may delete it from then on",
		Long: `Release backup BACKUP-ID of CLUSTER at --location (the spec's
backup.storageLocation) from its pin.

The runtime pins the backup it takes for a TakeBackup step (such as
backup-before-15.4): the rollback of the step that cannot be undone after
it (a PostgreSQL major upgrade, the last member of an etcd minor upgrade)
restores that backup into a new cluster. Retention never deletes a pinned
backup, whatever its count and age. Nothing releases a pin on its own: not
a later plan, another request, nor a shorter retention. Release it once
that rollback is no longer wanted (the upgraded cluster has run well for a
while); the retention then deletes it after a later backup, as any other.
cairn backup list shows the pins. Releasing a backup that is not pinned
changes nothing.`,
		Example: `  cairn backup list my-production-db --location s3://my-backup-bucket/postgres
  cairn backup release my-production-db 20261130T020000Z-1a2b3c --location s3://my-backup-bucket/postgres`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cluster, id := args[0], args[1]
			if err := spec.CheckName(cluster); err != nil {
				return &exitError{exitUsage, err}
			}
			if id == "" || strings.ContainsAny(id, "/\\") || strings.HasPrefix(id, ".") {
				return &exitError{exitUsage, fmt.Errorf("cairn backup release: %q is not a backup ID such as 20261130T020000Z-1a2b3c (cairn backup list shows them)", id)}
			}
			st, err := openLocation(location)
			if err != nil {
				return err
			}
			m, was, err := backup.Release(cmd.Context(), st, cluster, id)
			switch {
			case err != nil:
				return err
			case !was:
				fmt.Fprintf(cmd.OutOrStdout(), "backup %s of %s is not pinned; nothing changed\n", id, cluster)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "backup %s of %s released (taken for %s): retention may delete it after the next backup\n", id, cluster, m.Request)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&location, "location", "", "the backups' storageLocation (required)")
	_ = cmd.MarkFlagRequired("location")
	return cmd
}

func newBackupRun() *cobra.Command {
	var src liveSource
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "run CLUSTER [--kubeconfig FILE | --in-cluster] [--wait 30m]",
		Short: "Ask a cluster's runtime for a backup now, and wait for it",
		Long: `Ask the leading runtime of CLUSTER for a backup now (an annotation on its
status ConfigMap <cluster>-cairn-status) and wait until the runtime reports
it complete, or failed. The runtime takes it as it takes scheduled ones,
never two at once. While it waits it says on standard error what it waits
for and for how long, every few seconds. The cluster is found as kubectl
finds it: --kubeconfig, $KUBECONFIG, ~/.kube/config, then the pod's
ServiceAccount (docs/cli.md).`,
		Example: `  # ask for a backup of my-production-db and wait up to 30 minutes
  cairn backup run my-production-db --kubeconfig ~/.kube/prod --namespace databases

  # only ask; the runtime takes it on its own
  cairn backup run my-etcd-cluster --wait 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := spec.CheckName(args[0]); err != nil {
				return &exitError{exitUsage, err}
			}
			o, err := src.observer()
			if err != nil {
				return err
			}
			return runBackupRequest(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o.Client, o.Namespace, args[0], wait)
		},
	}
	f := cmd.Flags()
	f.StringVar(&src.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster the runtime runs in (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&src.context, "context", "", "the kubeconfig context to use")
	f.BoolVar(&src.inCluster, "in-cluster", false, "use the ServiceAccount of the pod cairn runs in")
	f.StringVar(&src.namespace, "namespace", "", "the cluster's namespace (default: the kubeconfig context's)")
	f.DurationVar(&wait, "wait", 30*time.Minute, "how long to wait for the backup; 0 returns once it is asked for")
	return cmd
}

// backupProgressEvery is how often cairn backup run says it still waits.
var backupProgressEvery = 5 * time.Second

// runBackupRequest writes the request and waits for its outcome, saying
// on progress what it waits for every backupProgressEvery.
func runBackupRequest(ctx context.Context, w, progress io.Writer, c kubernetes.Interface, ns, cluster string, wait time.Duration) error {
	if err := checkBackupTarget(ctx, c, ns, cluster); err != nil {
		return err
	}
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	id := "manual-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(nonce[:])
	name := contract.StatusConfigMap(cluster)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{contract.AnnotationBackupRequest: id}}})
	_, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "cairn"})
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{contract.AnnotationBackupRequest: id}}}
		_, err = c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "cairn"})
	}
	if err != nil {
		return fmt.Errorf("ask for a backup of %s: %w", cluster, err)
	}
	fmt.Fprintf(w, "backup %s of %s asked for\n", id, cluster)
	if wait <= 0 {
		return nil
	}
	start := time.Now()
	fmt.Fprintf(progress, "waiting up to %s for the runtime of %s to take backup %s (status ConfigMap %s/%s)\n", wait, cluster, id, ns, name)
	if note, leading := runtimeNote(ctx, c, ns, cluster, time.Now()); !leading {
		fmt.Fprintf(progress, "%s: %s\n", cluster, note)
	}
	// The wait bounds the loop, not each read: a read cut off by the
	// wait's end would fail with client-go's words, not with what the
	// runtime did.
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastSaid := start
	for {
		st, err := backupStatus(ctx, c, ns, name)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return err
		case st.LastManualRequest == id && st.LastSuccessful != nil:
			d := st.LastSuccessful
			fmt.Fprintf(w, "backup %s complete: %d bytes from %s at %s (%s)\n", d.ID, d.Size, d.Source, d.Location, time.Since(start).Round(time.Second))
			return nil
		case st.LastFailure != nil && st.LastFailure.Request == id:
			return fmt.Errorf("backup of %s failed (the runtime tries again in a minute): %s", cluster, st.LastFailure.Error)
		}
		if time.Since(lastSaid) >= backupProgressEvery {
			lastSaid = time.Now()
			fmt.Fprintf(progress, "still waiting for backup %s of %s: %s elapsed%s\n", id, cluster, time.Since(start).Round(time.Second), lastBackupNote(st, lastSaid))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return noOutcome(ctx, c, ns, cluster, wait)
		case <-tick.C:
		}
	}
}

// noOutcome is the one-line error of a backup the runtime reported no
// outcome of within wait: which runtime, what its Lease says, what to
// check.
func noOutcome(ctx context.Context, c kubernetes.Interface, ns, cluster string, wait time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	note, _ := runtimeNote(rctx, c, ns, cluster, time.Now())
	return fmt.Errorf("backup of %s: no outcome after %s; %s (the request stays: the runtime takes it when it can)", cluster, wait, note)
}

// lastBackupNote says what the runtime reports of the last backups, for
// the progress lines.
func lastBackupNote(st contract.BackupStatus, now time.Time) string {
	var parts []string
	if d := st.LastSuccessful; d != nil {
		parts = append(parts, fmt.Sprintf("last complete backup %s, %s ago", d.ID, now.Sub(d.Finished).Round(time.Second)))
	}
	if f := st.LastFailure; f != nil {
		parts = append(parts, "last failure: "+f.Error)
	}
	if len(parts) == 0 {
		return "; the runtime reports no backup yet"
	}
	return "; " + strings.Join(parts, "; ")
}

func backupStatus(ctx context.Context, c kubernetes.Interface, ns, name string) (contract.BackupStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return contract.BackupStatus{}, fmt.Errorf("read %s: %w", name, err)
	}
	return contract.ParseBackupStatus(cm.Data[contract.StatusKeyBackup])
}

func newRestore() *cobra.Command {
	var o restoreOptions
	cmd := &cobra.Command{
		Use:   "restore --location URL --cluster NAME --kind KIND --data-dir DIR [--backup ID] [--target-time TIME]",
		Short: "Restore a backup into a new data directory and verify it",
		Long: `Bring a complete backup of --cluster at --location back into --data-dir,
which must not exist. The data is checked against its manifest (size and
checksum) as it is read, and never read past the manifest's size; nothing
is left behind on failure, nor when SIGTERM or SIGINT stops it (exit 143
or 130): the copy is made in a temporary folder beside --data-dir and
renamed into place only when whole. PostgreSQL: the
base backup's tar is unpacked (it holds its WAL, so the copy starts
consistent). With --target-time (an RFC 3339 time, or latest) the archived
WAL is checked first, from the backup to the target, and the restore is
refused at a gap or a target the archive does not reach; the data
directory is then left to replay it when PostgreSQL starts on it
(recovery.signal, and restore_command = cairn backup wal-fetch in
postgresql.auto.conf), promoting at the target. Without --backup, the
newest backup that finished before the target. etcd: the snapshot is
restored as etcdutl does, for a new one-member cluster named --name at
--peer-url; add members to it as usual.`,
		Example: restoreExamples(),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runRestore(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.location, "location", "", "the backups' storageLocation (required)")
	f.StringVar(&o.cluster, "cluster", "", "the cluster the backup is of (required)")
	f.StringVar(&o.kind, "kind", "", strings.Join(restoreKinds(), " or ")+" (required)")
	f.StringVar(&o.id, "backup", "latest", "the backup's ID, or latest")
	f.StringVar(&o.dataDir, "data-dir", "", "the new data directory (required)")
	f.StringVar(&o.name, "name", "", "etcd: the restored member's name (default: <cluster>-0)")
	f.StringVar(&o.peerURL, "peer-url", "", "etcd: the restored member's peer URL (required for etcd)")
	f.StringVar(&o.token, "token", "", "etcd: the new cluster's initial token (default: <cluster>-restored)")
	f.StringVar(&o.target, "target-time", "", "PostgreSQL: replay the archived WAL to this RFC 3339 time, or latest")
	for _, r := range []string{"location", "cluster", "kind", "data-dir"} {
		_ = cmd.MarkFlagRequired(r)
	}
	return cmd
}

// restoreStore opens the store cairn restore reads; tests wrap it to
// stop a restore at a point of their choosing.
var restoreStore = openLocation

type restoreOptions struct {
	location, cluster, kind, id, dataDir, name, peerURL, token, target string
}

func runRestore(ctx context.Context, w io.Writer, o restoreOptions) error {
	if err := spec.CheckName(o.cluster); err != nil {
		return &exitError{exitUsage, err}
	}
	k, ok := kindNamed(o.kind)
	if !ok || k.restore.run == nil {
		return &exitError{exitUsage, fmt.Errorf("cairn restore: --kind must be one of %s, not %q", strings.Join(restoreKinds(), ", "), o.kind)}
	}
	if k.restore.check != nil {
		if err := k.restore.check(o); err != nil {
			return &exitError{exitUsage, fmt.Errorf("cairn restore: %w", err)}
		}
	}
	st, err := restoreStore(o.location)
	if err != nil {
		return err
	}
	var m backup.Manifest
	if t, terr := backup.ParseTarget(o.target); terr == nil && !t.IsZero() && o.id == contract.RestoreLatest {
		m, err = backup.FindBefore(ctx, st, o.cluster, t)
	} else {
		m, err = backup.Find(ctx, st, o.cluster, o.id)
	}
	if err != nil {
		return err
	}
	if m.Kind != o.kind {
		return fmt.Errorf("backup %s of %s is of a %s, not a %s", m.ID, o.cluster, m.Kind, o.kind)
	}
	var path backup.RecoveryPath
	if o.target != "" {
		if !k.restore.pointInTime {
			return &exitError{exitUsage, fmt.Errorf("cairn restore: --target-time: a %s backup restores as it was taken (it has no log archive to replay)", m.Kind)}
		}
		if path, err = planTarget(ctx, st, m, o.target); err != nil {
			return err
		}
	}
	if err := k.restore.run(ctx, w, st, m, o); err != nil {
		return err
	}
	if o.target != "" {
		fmt.Fprintf(w, "recovery to %s prepared in %s: start PostgreSQL on it to replay the archived WAL along timelines %v (the chain reaches %s); it promotes at the target\n", o.target, o.dataDir, path.Timelines, cmp.Or(path.Last, "the backup's end"))
	}
	fmt.Fprintf(w, "restored backup %s of %s (%d bytes from %s, finished %s) into %s\n", m.ID, o.cluster, m.Size, m.Source, m.Finished.Format(time.RFC3339), o.dataDir)
	return nil
}

// restorer is how `cairn restore` brings a kind's backup back: check
// refuses flags the kind needs and lacks (nil: none), run restores m
// into o.dataDir, saying on w what it left out.
type restorer struct {
	// pointInTime: the kind replays an archive past a backup up to
	// --target-time; its run prepares the replay before the restored
	// copy is put in place.
	pointInTime bool
	check       func(o restoreOptions) error
	run         func(ctx context.Context, w io.Writer, st backup.Store, m backup.Manifest, o restoreOptions) error
	// example is the kind's part of `cairn restore --help`'s examples.
	example string
}

// restoreExamples are the examples of the kinds of the table.
func restoreExamples() string {
	var out []string
	for _, k := range kinds {
		if k.restore.example != "" {
			out = append(out, k.restore.example)
		}
	}
	return strings.Join(out, "\n\n")
}

// restoreKinds are the kinds of the table that have backups to restore.
func restoreKinds() []string {
	var out []string
	for _, k := range kinds {
		if k.restore.run != nil {
			out = append(out, k.name)
		}
	}
	return out
}
