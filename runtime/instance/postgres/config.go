package postgres

import (
	"strconv"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// Config is what the rendered ConfigMap <cluster>-cairn tells a
// PostgreSQL member: the keys both kinds share, and PostgreSQL's own.
type Config struct {
	instance.Config
	// SynchronousStandbys is the wanted number of synchronous standbys.
	SynchronousStandbys int
	// ArchiveLocation is where a member archives WAL: the backup
	// location. The rendered archive_mode decides whether it does
	// (contract.PostgresArchiveSettings); empty refuses every push.
	ArchiveLocation string
}

// ReadConfig reads the mounted ConfigMap in dir: the shared keys
// (instance.ReadConfig), then PostgreSQL's. Missing keys keep their
// defaults.
func ReadConfig(dir string) (Config, error) {
	var c Config
	shared, err := instance.ReadConfig(dir, func(k *instance.ConfigKeys) {
		k.Set(contract.KeySynchronousStandbys, func(v string) (e error) { c.SynchronousStandbys, e = strconv.Atoi(v); return })
		k.Set(contract.KeyBackupStorageLocation, func(v string) error { c.ArchiveLocation = v; return nil })
	})
	c.Config = shared
	return c, err
}
