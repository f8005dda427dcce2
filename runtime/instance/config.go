package instance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is what the rendered ConfigMap <cluster>-cairn tells a member,
// read from its mounted files.
type Config struct {
	// Bootstrap is "new" while the create step brings the cluster up and
	// "existing" afterwards.
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
}

// Restore names a backup (the restore.* keys).
type Restore struct {
	Location, Cluster, Backup string
}

// ReadConfig reads the mounted ConfigMap in dir. Missing keys keep their
// defaults: bootstrap "existing", which can never create a second cluster.
func ReadConfig(dir string) (Config, error) {
	c := Config{Bootstrap: "existing"}
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
	set("bootstrap", func(v string) error {
		if v != "new" && v != "existing" {
			return fmt.Errorf("must be new or existing, got %q", v)
		}
		c.Bootstrap = v
		return nil
	})
	set("initial-members", func(v string) (e error) { c.InitialMembers, e = strconv.Atoi(v); return })
	set("initial-cluster-token", func(v string) error { c.Token = v; return nil })
	set("synchronous-standbys", func(v string) (e error) { c.SynchronousStandbys, e = strconv.Atoi(v); return })
	set("request.remove-member.member", func(v string) error { c.RemoveMember = v; return nil })
	set("restore.storage-location", func(v string) error {
		c.Restore = &Restore{Location: v, Backup: "latest"}
		return nil
	})
	if c.Restore != nil {
		set("restore.cluster", func(v string) error { c.Restore.Cluster = v; return nil })
		set("restore.backup", func(v string) error { c.Restore.Backup = v; return nil })
		if err == nil && c.Restore.Cluster == "" {
			err = errors.New("config restore.cluster: missing beside restore.storage-location")
		}
	}
	return c, err
}

// ordinal parses the StatefulSet ordinal from a pod name.
func ordinal(name string) (int, error) {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if i < 0 || err != nil || n < 0 {
		return 0, fmt.Errorf("pod name %q does not end in -<ordinal>", name)
	}
	return n, nil
}
