package contract

// An etcd minor downgrade (etcd 3.6 and later) goes through etcd's own
// protocol: a merged EtcdDowngrade step asks the runtime, through the
// ConfigMap <cluster>-cairn, to validate and enable the downgrade of the
// cluster version to the minor before (etcd then lowers the cluster
// version and migrates every member's storage to it), or to cancel one
// that is enabled; the members then move to the older minor one at a time
// by the StatefulSet's partition, as in an upgrade. etcd ends the
// downgrade itself once every member runs the target minor.

// Keys of the downgrade request in the ConfigMap <cluster>-cairn, a
// one-shot request of a merged EtcdDowngrade step like the others
// (request.*): its step ID, what it asks (EtcdDowngradeEnable or
// EtcdDowngradeCancel) and, to enable, the target minor ("3.6").
const (
	KeyRequestEtcdDowngradeID     = "request.etcd-downgrade.id"
	KeyRequestEtcdDowngradeAction = "request.etcd-downgrade.action"
	KeyRequestEtcdDowngradeTo     = "request.etcd-downgrade.to"
)

// The actions of a downgrade request.
const (
	// EtcdDowngradeEnable: validate, then enable the downgrade to the
	// target minor (etcd's Maintenance.Downgrade VALIDATE, then ENABLE).
	EtcdDowngradeEnable = "enable"
	// EtcdDowngradeCancel: cancel the enabled downgrade (CANCEL); etcd
	// raises the cluster version again once every member runs the newer
	// minor.
	EtcdDowngradeCancel = "cancel"
)

// EtcdDowngrade is what the runtime reports of etcd's downgrade, in
// EtcdStatus.Downgrade.
type EtcdDowngrade struct {
	// Enabled and Target are what etcd reports (the downgrade info of a
	// 3.6+ member's status): a downgrade of the cluster version to Target
	// ("3.6") is enabled. No member at 3.6 or later: not enabled.
	Enabled bool   `json:"enabled"`
	Target  string `json:"target,omitempty"`
	// StorageMigrated: every member that reports a storage version (3.6
	// and later) reports Target's; a member moves to Target's binary only
	// once its storage is.
	StorageMigrated bool `json:"storageMigrated,omitempty"`
	// Done is the ID of the last downgrade request the runtime carried
	// out; it is not acted on again.
	Done string `json:"done,omitempty"`
	// Error says why etcd refused the last attempt at the request not yet
	// done (the runtime tries again each pass).
	Error string `json:"error,omitempty"`
}
