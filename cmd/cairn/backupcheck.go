package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// checkBackupTarget makes sure cairn backup run asks a runtime that takes
// backups: cluster's rendered ConfigMap <cluster>-cairn is in ns (else
// there is no such cluster there) and holds a backup policy (else its
// runtime never serves the request). The errors are exit code 1 and say
// what to check; nothing is written.
func checkBackupTarget(ctx context.Context, c kubernetes.Interface, ns, cluster string) error {
	name := contract.ConfigMap(cluster)
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &exitError{exitInvalid, fmt.Errorf("cairn backup run: no cluster %s in namespace %s: its ConfigMap %s is not there (check the cluster's name and --namespace; a new cluster has one once its first step is synced)", cluster, ns, name)}
	case err != nil:
		return &exitError{exitInvalid, fmt.Errorf("cairn backup run: read ConfigMap %s/%s: %w", ns, name, err)}
	}
	if _, on, err := backup.PolicyFromConfig(cm.Data); err != nil {
		return &exitError{exitInvalid, fmt.Errorf("cairn backup run: the backup policy of %s in ConfigMap %s/%s: %w", cluster, ns, name, err)}
	} else if !on {
		return &exitError{exitInvalid, fmt.Errorf("cairn backup run: %s has no backup policy (its spec sets no backup.schedule and storageLocation), so its runtime takes no backups", cluster)}
	}
	return nil
}

// runtimeNote says, in one clause, what the Lease of cluster's runtime
// tells of it at now and what to check, for the error of a backup that
// got no outcome and the first progress line; leading reports whether a
// replica held the Lease within its duration.
func runtimeNote(ctx context.Context, c kubernetes.Interface, ns, cluster string, now time.Time) (note string, leading bool) {
	name := contract.Runtime(cluster)
	check := fmt.Sprintf("check kubectl -n %s get deployment %s and kubectl -n %s logs deployment/%s", ns, name, ns, name)
	l, err := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("no replica of its runtime %s/%s has ever led (no Lease %s): %s", ns, name, name, check), false
	case err != nil:
		return fmt.Sprintf("the Lease of its runtime %s/%s could not be read (%v): %s", ns, name, err, check), false
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	var renewed time.Time
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	var lease time.Duration
	if l.Spec.LeaseDurationSeconds != nil {
		lease = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if holder == "" || renewed.IsZero() || now.Sub(renewed) > lease {
		ago := "never"
		if !renewed.IsZero() {
			ago = now.Sub(renewed).Round(time.Second).String() + " ago"
		}
		return fmt.Sprintf("no replica of its runtime %s/%s leads (its Lease was last renewed %s): %s", ns, name, ago, check), false
	}
	return fmt.Sprintf("its runtime %s/%s leads (pod %s) but reported no outcome: it takes one backup at a time, so a long one may be running; check kubectl -n %s logs %s", ns, name, holder, ns, holder), true
}
