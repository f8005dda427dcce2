package postgres

import (
	"context"
	"os"
	"path/filepath"
)

// Member 0 of a create step (bootstrap=new), finding no primary and no
// backup to restore, initialises the cluster; Start then creates the
// replication user.

// initdb creates the data directory with the superuser's password,
// scram-sha-256 for connections and data checksums.
func (p *Manager) initdb(ctx context.Context) error {
	if err := p.ensureDir(p.PGData); err != nil {
		return err
	}
	pw := filepath.Join(filepath.Dir(p.PGData), ".cairn-initdb-pw")
	if err := p.writeOwned(pw, p.SuperuserPassword+"\n"); err != nil {
		return err
	}
	defer os.Remove(pw)
	p.Log.Info("initialising the cluster", "member", p.Name)
	return p.run(ctx, nil, "initdb", "-D", p.PGData, "--username", Superuser, "--pwfile", pw,
		"--auth-local", "peer", "--auth-host", "scram-sha-256", "--encoding", "UTF8", "--data-checksums")
}
