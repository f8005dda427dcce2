package renderer

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

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
func cairnConfig(n names, s settings, token string, initial int) object {
	data := map[string]string{"bootstrap": s.bootstrap}
	if initial > 0 {
		data["initial-members"] = strconv.Itoa(initial)
	}
	if token != "" {
		data["initial-cluster-token"] = token
	}
	if n.app == "postgresql" {
		data["synchronous-standbys"] = strconv.Itoa(s.sync)
	}
	addBackup(data, s.backup)
	if r := s.restore; r != nil && s.bootstrap == "new" {
		data["restore.storage-location"] = r.StorageLocation
		data["restore.cluster"] = r.Cluster
		data["restore.backup"] = r.Backup
	}
	r := s.requests
	for k, v := range map[string]string{
		"request.switchover.id": r.SwitchoverID, "request.switchover.to": r.SwitchoverTo,
		"request.remove-member.id": r.RemoveID, "request.remove-member.member": r.RemoveMember,
		"request.backup.id": r.BackupID,
	} {
		if v != "" {
			data[k] = v
		}
	}
	return object{file: "cairn-config.yaml", obj: &corev1.ConfigMap{
		TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: n.meta(n.cluster+"-cairn", "config"), Data: data,
	}}
}

func addBackup(data map[string]string, b *plan.BackupSettings) {
	if b == nil {
		return
	}
	data["backup.schedule"] = b.Schedule
	data["backup.time-zone"] = b.TimeZone
	data["backup.storage-location"] = b.StorageLocation
	if b.RetentionCount > 0 {
		data["backup.retention.count"] = strconv.Itoa(b.RetentionCount)
	}
	if b.RetentionMaxAge != "" {
		data["backup.retention.max-age"] = b.RetentionMaxAge
	}
}
