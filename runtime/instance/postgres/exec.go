package postgres

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairn-dev/cairn/runtime/instance"
)

// The PostgreSQL programs a member runs, and the files it writes, as the
// member's user.

func (p *Manager) bin(name string) string {
	if p.BinDir == "" {
		return name
	}
	return filepath.Join(p.BinDir, name)
}

// run runs a PostgreSQL program as the member's user; extraEnv carries
// passwords to it without a command line or a log line.
func (p *Manager) run(ctx context.Context, extraEnv []string, name string, args ...string) error {
	return p.runIn(ctx, "", extraEnv, name, args...)
}

// runIn runs a PostgreSQL program in directory dir.
func (p *Manager) runIn(ctx context.Context, dir string, extraEnv []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, p.bin(name), args...)
	cmd.Dir = dir
	cmd.Env = instance.ChildEnv(extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.Credential}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (p *Manager) ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return p.chown(dir)
}

// writeOwned writes a file readable by the member's user only (also when
// it existed with wider permissions: libpq ignores a passfile others can
// read).
func (p *Manager) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	return p.chown(path)
}

func (p *Manager) chown(path string) error {
	if p.Credential == nil {
		return nil
	}
	return os.Chown(path, int(p.Credential.Uid), int(p.Credential.Gid))
}
