package instance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// Config is what the rendered ConfigMap <cluster>-cairn tells a member
// of either kind, read from its mounted files; each kind's package reads
// its own keys beside it.
type Config struct {
	// Bootstrap is contract.BootstrapNew while the create step brings the
	// cluster up and contract.BootstrapExisting afterwards.
	Bootstrap string
	// Restore is the backup a create step starts the cluster from; nil
	// starts it empty.
	Restore *Restore
	// TLS is the cluster's TLS mode (contract.TLSModes), for
	// PostgreSQL and etcd members alike.
	TLS string
}

// Restore names a backup (the contract.KeyRestore* keys).
type Restore struct {
	Location, Cluster, Backup string
	// Target is how far a PostgreSQL restore replays archived WAL: an
	// RFC 3339 time or contract.RestoreLatest; empty stops at the
	// backup's end.
	Target string
}

// ConfigKeys reads the keys of a mounted ConfigMap, one file each in
// Dir, and keeps the first error: a kind's package reads its own keys
// with it.
type ConfigKeys struct {
	Dir string
	err error
}

// Get reads key; ok is false when the ConfigMap does not hold it.
func (k *ConfigKeys) Get(key string) (v string, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(k.Dir, key))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read config %s: %w", key, err)
	}
	return strings.TrimSpace(string(data)), true, nil
}

// Set passes key's value to fn when the ConfigMap holds it, unless an
// earlier key failed; the first failure is kept (Err).
func (k *ConfigKeys) Set(key string, fn func(v string) error) {
	if k.err != nil {
		return
	}
	v, ok, err := k.Get(key)
	if k.err = err; err == nil && ok {
		if ferr := fn(v); ferr != nil {
			k.err = fmt.Errorf("config %s: %w", key, ferr)
		}
	}
}

// Fail records err unless an earlier key failed.
func (k *ConfigKeys) Fail(err error) {
	if k.err == nil {
		k.err = err
	}
}

// Err is the first failure.
func (k *ConfigKeys) Err() error { return k.err }

// ReadConfig reads the keys both kinds share from the mounted ConfigMap
// in dir, then, with kind (when not nil), the kind's own keys. Missing
// keys keep their defaults: bootstrap contract.BootstrapExisting, which
// can never create a second cluster.
func ReadConfig(dir string, kind func(k *ConfigKeys)) (Config, error) {
	c := Config{Bootstrap: contract.BootstrapExisting}
	k := &ConfigKeys{Dir: dir}
	k.Set(contract.KeyBootstrap, func(v string) error {
		if v != contract.BootstrapNew && v != contract.BootstrapExisting {
			return fmt.Errorf("must be %s or %s, got %q", contract.BootstrapNew, contract.BootstrapExisting, v)
		}
		c.Bootstrap = v
		return nil
	})
	k.Set(contract.KeyTLS, func(v string) error {
		mode, ok := contract.TLSMode(v)
		if !ok {
			return fmt.Errorf("must be one of %s, got %q", strings.Join(contract.TLSModes, ", "), v)
		}
		c.TLS = mode
		return nil
	})
	k.Set(contract.KeyRestoreStorageLocation, func(v string) error {
		c.Restore = &Restore{Location: v, Backup: contract.RestoreLatest}
		return nil
	})
	if c.Restore != nil {
		k.Set(contract.KeyRestoreCluster, func(v string) error { c.Restore.Cluster = v; return nil })
		k.Set(contract.KeyRestoreBackup, func(v string) error { c.Restore.Backup = v; return nil })
		k.Set(contract.KeyRestoreTarget, func(v string) error {
			_, err := backup.ParseTarget(v)
			c.Restore.Target = v
			return err
		})
		if k.Err() == nil && c.Restore.Cluster == "" {
			k.Fail(fmt.Errorf("config %s: missing beside %s", contract.KeyRestoreCluster, contract.KeyRestoreStorageLocation))
		}
	}
	if kind != nil && k.Err() == nil {
		kind(k)
	}
	return c, k.Err()
}
