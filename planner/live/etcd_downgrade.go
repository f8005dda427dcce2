package live

// EtcdDowngrade is etcd's downgrade of its cluster version as the runtime
// reports it (contract.EtcdDowngrade).
type EtcdDowngrade struct {
	// Enabled: etcd reports a downgrade to Target ("3.6") enabled.
	Enabled bool   `json:"enabled,omitempty"`
	Target  string `json:"target,omitempty"`
	// StorageMigrated: every member that reports a storage version (3.6
	// and later) reports Target's.
	StorageMigrated bool `json:"storageMigrated,omitempty"`
	// Done is the ID of the last downgrade request (a merged EtcdDowngrade
	// step) the runtime carried out; Error why etcd refused the last try
	// at the one it has not.
	Done  string `json:"done,omitempty"`
	Error string `json:"error,omitempty"`
}

// DowngradeEnabled reports whether etcd has a downgrade of c's cluster
// version enabled, and to which minor.
func (c *Cluster) DowngradeEnabled() (string, bool) {
	if c == nil || c.Downgrade == nil || !c.Downgrade.Enabled {
		return "", false
	}
	return c.Downgrade.Target, true
}
