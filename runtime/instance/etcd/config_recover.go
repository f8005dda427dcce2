package etcd

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// Recover is a merged EtcdRecover step's recovery (the contract.KeyRecover*
// keys).
type Recover struct {
	// ID is the step's ID; each member carries a recovery out once.
	ID string
	// Mode is contract.EtcdRecoverFromSnapshot or EtcdRecoverFromMember.
	Mode string
	// Seed is the member the new cluster starts from.
	Seed string
	// Token is the new cluster's token (snapshot mode).
	Token string
	// Snapshot is the backup the seed restores (snapshot mode).
	Snapshot *instance.Restore
}

// readRecover reads the recovery keys; nil when there is no recovery.
func readRecover(read func(key string) (string, bool, error)) (*Recover, error) {
	get := func(key string) (string, error) {
		v, _, err := read(key)
		return v, err
	}
	id, err := get(contract.KeyRecoverID)
	if err != nil || id == "" {
		return nil, err
	}
	r := &Recover{ID: id}
	for key, dst := range map[string]*string{contract.KeyRecoverMode: &r.Mode, contract.KeyRecoverSeed: &r.Seed, contract.KeyRecoverToken: &r.Token} {
		if *dst, err = get(key); err != nil {
			return nil, err
		}
	}
	if r.Seed == "" {
		return nil, fmt.Errorf("config %s: missing beside %s", contract.KeyRecoverSeed, contract.KeyRecoverID)
	}
	switch r.Mode {
	case contract.EtcdRecoverFromMember:
	case contract.EtcdRecoverFromSnapshot:
		s := &instance.Restore{}
		for key, dst := range map[string]*string{contract.KeyRecoverStorageLocation: &s.Location, contract.KeyRecoverCluster: &s.Cluster, contract.KeyRecoverBackup: &s.Backup} {
			if *dst, err = get(key); err != nil {
				return nil, err
			}
			if *dst == "" {
				return nil, fmt.Errorf("config %s: missing in a recovery from a snapshot", key)
			}
		}
		if r.Token == "" {
			return nil, fmt.Errorf("config %s: missing in a recovery from a snapshot", contract.KeyRecoverToken)
		}
		r.Snapshot = s
	default:
		return nil, fmt.Errorf("config %s: must be %s or %s, got %q", contract.KeyRecoverMode, contract.EtcdRecoverFromSnapshot, contract.EtcdRecoverFromMember, r.Mode)
	}
	return r, nil
}
