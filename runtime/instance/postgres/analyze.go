package postgres

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
)

// pg_upgrade does not carry the planner's statistics over before
// PostgreSQL 18, and a primary without them plans badly until autovacuum
// gets round to every table. So the upgrade leaves a marker beside the
// data directory, and the upgraded primary, once it serves, rebuilds them
// with vacuumdb --all --analyze-in-stages (PostgreSQL documentation,
// pg_upgrade, "Statistics"), a minimal set first so the worst plans go
// quickly. The marker goes once that is done; a restart half-way does it
// again.

// analyzePending names the marker.
const analyzePending = ".cairn-analyze-pending"

// statsCarriedFrom is the first major whose pg_upgrade keeps statistics.
const statsCarriedFrom = 18

func (p *Manager) analyzeMarker() string {
	return filepath.Join(filepath.Dir(p.PGData), analyzePending)
}

// markAnalyze asks the upgraded primary to rebuild its statistics.
func (u *Upgrade) markAnalyze() error {
	if u.To >= statsCarriedFrom {
		return nil
	}
	return u.manager(u.PGData, u.NewBin).writeOwned(filepath.Join(filepath.Dir(u.PGData), analyzePending), strconv.Itoa(u.From)+" -> "+strconv.Itoa(u.To)+"\n")
}

// analyzeAfterUpgrade rebuilds the statistics when an upgrade asked for
// it. It runs beside the serving primary; a failure is logged and left
// for the next start.
func (p *Manager) analyzeAfterUpgrade(ctx context.Context) {
	marker := p.analyzeMarker()
	if _, err := os.Stat(marker); err != nil {
		return
	}
	p.Log.Info("rebuilding statistics after pg_upgrade", "member", p.Name)
	err := p.run(ctx, []string{"PGPASSWORD=" + p.SuperuserPassword}, "vacuumdb", "--all", "--analyze-in-stages",
		"--host", p.Host, "--port", strconv.Itoa(p.Port), "--username", Superuser)
	if err != nil {
		p.Log.Warn("rebuilding statistics failed; tried again at the next start", "member", p.Name, "error", err.Error())
		return
	}
	if err := os.Remove(marker); err != nil {
		p.Log.Warn("statistics rebuilt, marker left", "member", p.Name, "error", err.Error())
		return
	}
	p.Log.Info("statistics rebuilt", "member", p.Name)
}
