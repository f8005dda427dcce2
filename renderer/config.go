package renderer

import (
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
)

// cairnConfig is the ConfigMap <cluster>-cairn: what the instance managers
// and the runtime read from Git. Pods mount it, so changes reach them
// without a restart. Keys:
//
//	bootstrap            "new" while the create step runs, then "existing"
//	initial-members      members bootstrapped together by the create step
//	initial-cluster-token etcd's token for that bootstrap
//	synchronous-standbys PostgreSQL: the number the runtime keeps
//	backup.*             the backup policy the runtime runs
//	restore.*            the backup the create step starts the cluster from
//	request.*            one-shot requests of merged steps, by step ID
//	switchover.served    the last spec.switchover request a step served
//	recover.*            etcd: a merged recovery, by step ID
//
// kindKeys are the keys only the cluster's kind writes.
func cairnConfig(n names, s Settings, token string, initial int, kindKeys map[string]string) Object {
	data := map[string]string{contract.KeyBootstrap: s.Bootstrap}
	maps.Copy(data, kindKeys)
	if initial > 0 {
		data[contract.KeyInitialMembers] = strconv.Itoa(initial)
	}
	if token != "" {
		data[contract.KeyInitialClusterToken] = token
	}
	if networkRestricted(s) {
		data[contract.KeyNetwork] = contract.NetworkRestricted
	}
	addBackup(data, s.Backup)
	if r := s.Restore; r != nil && s.Bootstrap == contract.BootstrapNew {
		data[contract.KeyRestoreStorageLocation] = r.StorageLocation
		data[contract.KeyRestoreCluster] = r.Cluster
		data[contract.KeyRestoreBackup] = r.Backup
		if r.TargetTime != "" {
			data[contract.KeyRestoreTarget] = r.TargetTime
		}
	}
	r := s.Requests
	for k, v := range map[string]string{
		contract.KeyRequestSwitchoverID: r.SwitchoverID, contract.KeyRequestSwitchoverTo: r.SwitchoverTo,
		contract.KeyRequestRemoveMemberID: r.RemoveID, contract.KeyRequestRemoveMember: r.RemoveMember,
		contract.KeyRequestBackupID: r.BackupID, contract.KeySwitchoverServed: s.SwitchoverServed,
	} {
		if v != "" {
			data[k] = v
		}
	}
	addRecover(data, r.RecoverID, r.Recover)
	addDowngrade(data, r.DowngradeID, r.Downgrade)
	return Object{File: "cairn-config.yaml", Obj: &corev1.ConfigMap{
		TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: n.meta(contract.ConfigMap(n.cluster), "config"), Data: data,
	}}
}

func addBackup(data map[string]string, b *plan.BackupSettings) {
	if b == nil {
		return
	}
	data[contract.KeyBackupSchedule] = b.Schedule
	data[contract.KeyBackupTimeZone] = b.TimeZone
	data[contract.KeyBackupStorageLocation] = b.StorageLocation
	if b.RetentionCount > 0 {
		data[contract.KeyBackupRetentionCount] = strconv.Itoa(b.RetentionCount)
	}
	if b.RetentionMaxAge != "" {
		data[contract.KeyBackupRetentionMaxAge] = b.RetentionMaxAge
	}
}

// addRecover writes a merged EtcdRecover step's recovery.
func addRecover(data map[string]string, id string, p *plan.EtcdRecoverParams) {
	if p == nil {
		return
	}
	data[contract.KeyRecoverID] = id
	data[contract.KeyRecoverMode] = p.Mode
	data[contract.KeyRecoverSeed] = p.Seed
	if p.Mode == contract.EtcdRecoverFromSnapshot {
		data[contract.KeyRecoverToken] = p.Token
		data[contract.KeyRecoverStorageLocation] = p.StorageLocation
		data[contract.KeyRecoverCluster] = p.Cluster
		data[contract.KeyRecoverBackup] = p.Backup
	}
}
