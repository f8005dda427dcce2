package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/runtime/instance"
)

// A member without data (or with data of another major, moved aside)
// clones the primary with pg_basebackup and follows it.

// clone copies the primary's data directory and makes it follow primary.
func (p *Manager) clone(ctx context.Context, primary string) error {
	host, port, err := splitHostPort(primary)
	if err != nil {
		return err
	}
	// Clone beside the data directory and move it in only when complete:
	// an interrupted clone never looks like data.
	tmp := p.cloneDir()
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := p.ensureDir(tmp); err != nil {
		return err
	}
	p.Log.Info("cloning from the primary", "member", p.Name, "primary", primary)
	err = p.run(ctx, []string{"PGPASSWORD=" + p.ReplicationPassword}, "pg_basebackup",
		"-d", p.conninfo(host, port, ReplicationUser), "-D", tmp,
		"-X", "stream", "--checkpoint=fast", "--no-password")
	if err != nil {
		return fmt.Errorf("clone from %s: %w", primary, err)
	}
	if err := p.swapIn(tmp); err != nil {
		return fmt.Errorf("clone from %s: %w", primary, err)
	}
	return p.follow(primary)
}

// swapIn puts the complete clone in tmp in place of the data directory
// by renames only, so a crash never leaves a half-removed data directory
// that still looks like data: the old one (a re-cloned replica's) is
// renamed to replacedDir first and removed last.
func (p *Manager) swapIn(tmp string) error {
	replaced := p.replacedDir()
	if err := os.RemoveAll(replaced); err != nil {
		return err
	}
	if err := os.Rename(p.PGData, replaced); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, p.PGData); err != nil {
		return err
	}
	if err := os.RemoveAll(replaced); err != nil {
		return fmt.Errorf("remove the replaced data directory: %w", err)
	}
	return nil
}

func (p *Manager) cloneDir() string    { return strings.TrimRight(p.PGData, "/") + ".cloning" }
func (p *Manager) replacedDir() string { return strings.TrimRight(p.PGData, "/") + ".replaced" }

// discardPartialClone removes what an interrupted clone left: the copy in
// progress was never data. A data directory being replaced when the
// manager stopped is put back if nothing took its place (the re-clone is
// decided again), and removed if the clone did.
func (p *Manager) discardPartialClone() error {
	if err := os.RemoveAll(p.cloneDir()); err != nil {
		return fmt.Errorf("remove an interrupted clone: %w", err)
	}
	replaced := p.replacedDir()
	whole, err := instance.Exists(filepath.Join(replaced, "PG_VERSION"))
	if err != nil {
		return err
	}
	has, err := instance.Exists(p.PGData)
	if err != nil {
		return err
	}
	if has || !whole {
		if err := os.RemoveAll(replaced); err != nil {
			return fmt.Errorf("remove the replaced data directory: %w", err)
		}
		return nil
	}
	p.Log.Warn("a re-clone stopped between its renames: putting the old data back", "member", p.Name)
	if err := os.Rename(replaced, p.PGData); err != nil {
		return fmt.Errorf("put the replaced data directory back: %w", err)
	}
	return nil
}

// staleMajor reports whether the data directory is of another major than
// the server binary.
func (p *Manager) staleMajor() (bool, error) {
	data, err := os.ReadFile(filepath.Join(p.PGData, "PG_VERSION"))
	if err != nil {
		return false, err
	}
	major, err := p.binaryMajor()
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(data)) != major, nil
}

// binaryMajor is the major of the member's postgres ("13", "15").
func (p *Manager) binaryMajor() (string, error) {
	out, err := exec.Command(p.bin("postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("postgres --version: %w", err)
	}
	fields := strings.Fields(string(out)) // postgres (PostgreSQL) 15.18 ...
	if len(fields) < 3 {
		return "", fmt.Errorf("postgres --version printed %q", out)
	}
	major, _, _ := strings.Cut(fields[2], ".")
	return major, nil
}

// dataOfThisMajor reports whether the member starts from its data: data
// of another major is moved aside when a primary answers to clone from
// (then there is no data), and refused when none does.
func (p *Manager) dataOfThisMajor(primary string) (bool, error) {
	stale, err := p.staleMajor()
	switch {
	case err != nil:
		return false, err
	case !stale:
		return true, nil
	case primary == "":
		return false, fmt.Errorf("%s holds data of another PostgreSQL major and no primary answers to clone from", p.PGData)
	}
	if err := p.moveAside(); err != nil {
		return false, err
	}
	return false, nil
}

func (p *Manager) moveAside() error {
	return instance.MoveAside(p.PGData, p.Log.With("member", p.Name), "data directory is of another major; keeping it aside and cloning")
}
