package instance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// Config is what the rendered ConfigMap <cluster>-cairn tells a member,
// read from its mounted files.
type Config struct {
	// Bootstrap is contract.BootstrapNew while the create step brings the
	// cluster up and contract.BootstrapExisting afterwards.
	Bootstrap string
	// InitialMembers is how many members the create step bootstraps.
	InitialMembers int
	// Token is etcd's initial cluster token of that bootstrap.
	Token string
	// SynchronousStandbys is PostgreSQL's wanted number.
	SynchronousStandbys int
	// RemoveMember names the etcd member a merged scale-in step asked the
	// runtime to remove; that member must not join again.
	RemoveMember string
	// Restore is the backup a create step starts the cluster from; nil
	// starts it empty.
	Restore *Restore
	// SpaceQuota is etcd's --quota-backend-bytes; 0 leaves etcd's default.
	SpaceQuota int64
	// Recover is a merged EtcdRecover step's recovery; nil when there is
	// none.
	Recover *Recover
	// TLS is the cluster's TLS mode (contract.TLSModes), for
	// PostgreSQL and etcd members alike.
	TLS string
	// ArchiveLocation is where a PostgreSQL member archives WAL: the
	// backup location. The rendered archive_mode decides whether it does
	// (contract.PostgresArchiveSettings); empty refuses every push.
	ArchiveLocation string
}

// Restore names a backup (the contract.KeyRestore* keys).
type Restore struct {
	Location, Cluster, Backup string
	// Target is how far a PostgreSQL restore replays archived WAL: an
	// RFC 3339 time or contract.RestoreLatest; empty stops at the
	// backup's end.
	Target string
}

// ReadConfig reads the mounted ConfigMap in dir. Missing keys keep their
// defaults: bootstrap contract.BootstrapExisting, which can never create a
// second cluster.
func ReadConfig(dir string) (Config, error) {
	c := Config{Bootstrap: contract.BootstrapExisting}
	read := func(key string) (string, bool, error) {
		data, err := os.ReadFile(filepath.Join(dir, key))
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("read config %s: %w", key, err)
		}
		return strings.TrimSpace(string(data)), true, nil
	}
	var err error
	set := func(key string, fn func(v string) error) {
		if err != nil {
			return
		}
		v, ok, rerr := read(key)
		if err = rerr; err == nil && ok {
			if ferr := fn(v); ferr != nil {
				err = fmt.Errorf("config %s: %w", key, ferr)
			}
		}
	}
	set(contract.KeyBootstrap, func(v string) error {
		if v != contract.BootstrapNew && v != contract.BootstrapExisting {
			return fmt.Errorf("must be %s or %s, got %q", contract.BootstrapNew, contract.BootstrapExisting, v)
		}
		c.Bootstrap = v
		return nil
	})
	set(contract.KeyInitialMembers, func(v string) (e error) { c.InitialMembers, e = strconv.Atoi(v); return })
	set(contract.KeyInitialClusterToken, func(v string) error { c.Token = v; return nil })
	set(contract.KeySynchronousStandbys, func(v string) (e error) { c.SynchronousStandbys, e = strconv.Atoi(v); return })
	set(contract.KeyRequestRemoveMember, func(v string) error { c.RemoveMember = v; return nil })
	set(contract.KeyTLS, func(v string) error {
		mode, ok := contract.TLSMode(v)
		if !ok {
			return fmt.Errorf("must be one of %s, got %q", strings.Join(contract.TLSModes, ", "), v)
		}
		c.TLS = mode
		return nil
	})
	set(contract.KeyEtcdQuotaBackendBytes, func(v string) (e error) { c.SpaceQuota, e = parseQuota(v); return })
	set(contract.KeyRestoreStorageLocation, func(v string) error {
		c.Restore = &Restore{Location: v, Backup: contract.RestoreLatest}
		return nil
	})
	if c.Restore != nil {
		set(contract.KeyRestoreCluster, func(v string) error { c.Restore.Cluster = v; return nil })
		set(contract.KeyRestoreBackup, func(v string) error { c.Restore.Backup = v; return nil })
		set(contract.KeyRestoreTarget, func(v string) error {
			_, err := backup.ParseTarget(v)
			c.Restore.Target = v
			return err
		})
		if err == nil && c.Restore.Cluster == "" {
			err = fmt.Errorf("config %s: missing beside %s", contract.KeyRestoreCluster, contract.KeyRestoreStorageLocation)
		}
	}
	set(contract.KeyBackupStorageLocation, func(v string) error { c.ArchiveLocation = v; return nil })
	if err == nil {
		c.Recover, err = readRecover(read)
	}
	return c, err
}

// parseQuota reads a space quota in bytes: a positive integer.
func parseQuota(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("must be a number of bytes greater than zero, got %q", v)
	}
	return n, nil
}
