package etcd

import (
	"fmt"
	"strconv"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// Config is what the rendered ConfigMap <cluster>-cairn tells an etcd
// member: the keys both kinds share, and etcd's own.
type Config struct {
	instance.Config
	// InitialMembers is how many members the create step bootstraps.
	InitialMembers int
	// Token is etcd's initial cluster token of that bootstrap.
	Token string
	// RemoveMember names the etcd member a merged scale-in step asked the
	// runtime to remove; that member must not join again.
	RemoveMember string
	// SpaceQuota is etcd's --quota-backend-bytes; 0 leaves etcd's default.
	SpaceQuota int64
	// Recover is a merged EtcdRecover step's recovery; nil when there is
	// none.
	Recover *Recover
}

// ReadConfig reads the mounted ConfigMap in dir: the shared keys
// (instance.ReadConfig), then etcd's. Missing keys keep their defaults.
func ReadConfig(dir string) (Config, error) {
	var c Config
	shared, err := instance.ReadConfig(dir, func(k *instance.ConfigKeys) {
		k.Set(contract.KeyInitialMembers, func(v string) (e error) { c.InitialMembers, e = strconv.Atoi(v); return })
		k.Set(contract.KeyInitialClusterToken, func(v string) error { c.Token = v; return nil })
		k.Set(contract.KeyRequestRemoveMember, func(v string) error { c.RemoveMember = v; return nil })
		k.Set(contract.KeyEtcdQuotaBackendBytes, func(v string) (e error) { c.SpaceQuota, e = parseQuota(v); return })
		if k.Err() == nil {
			var err error
			c.Recover, err = readRecover(k.Get)
			k.Fail(err)
		}
	})
	c.Config = shared
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
