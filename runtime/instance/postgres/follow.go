package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// A member with data follows the primary that answers: a replica as it
// is, a former primary after pg_rewind brings it onto the primary's
// timeline, so there is never a second primary.

// rewind brings the data (a former primary's, or a replica's that
// forked off) onto the current primary's timeline.
func (p *Manager) rewind(ctx context.Context, primary string) error {
	host, port, err := splitHostPort(primary)
	if err != nil {
		return err
	}
	// pg_rewind reads the source's timeline from its control file, which a
	// just-promoted primary updates only at its next checkpoint.
	if err := p.exec(ctx, primary, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint on %s before pg_rewind: %w", primary, err)
	}
	src := p.conninfo(host, port, Superuser) + " dbname=" + contract.PostgresDatabase
	if err := p.linkConfig(); err != nil {
		return err
	}
	if err := p.run(ctx, []string{"PGPASSWORD=" + p.SuperuserPassword}, "pg_rewind",
		"--target-pgdata", p.PGData, "--source-server", src); err != nil {
		return fmt.Errorf("pg_rewind from %s: %w", primary, err)
	}
	return nil
}

// follow makes the data directory a standby of primary: standby.signal,
// and primary_conninfo in postgresql.auto.conf with the password in a
// passfile on the volume, never in the config.
func (p *Manager) follow(primary string) error {
	host, port, err := splitHostPort(primary)
	if err != nil {
		return err
	}
	pass := p.passfile()
	if err := p.writeOwned(pass, fmt.Sprintf("*:*:*:%s:%s\n", ReplicationUser, pgpassEscape(p.ReplicationPassword))); err != nil {
		return err
	}
	conninfo := p.conninfo(host, port, ReplicationUser) + " passfile=" + conninfoValue(pass) + " application_name=" + conninfoValue(p.Name)
	auto := filepath.Join(p.PGData, "postgresql.auto.conf")
	old, err := os.ReadFile(auto)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		if l != "" && !strings.HasPrefix(strings.TrimSpace(l), "primary_conninfo") {
			lines = append(lines, l)
		}
	}
	lines = append(lines, "primary_conninfo = '"+strings.ReplaceAll(conninfo, "'", "''")+"'")
	if err := p.writeOwned(auto, strings.Join(lines, "\n")+"\n"); err != nil {
		return err
	}
	return p.writeOwned(filepath.Join(p.PGData, "standby.signal"), "")
}

func (p *Manager) passfile() string { return filepath.Join(filepath.Dir(p.PGData), ".cairn-pgpass") }

func (p *Manager) isStandby() bool {
	ok, _ := instance.Exists(filepath.Join(p.PGData, "standby.signal"))
	return ok
}

func pgpassEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, ":", `\:`).Replace(s)
}
