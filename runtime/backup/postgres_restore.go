package backup

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairn-dev/cairn/planner/spec"
)

// PostgresRestore is where a base backup is restored: a new data
// directory.
type PostgresRestore struct {
	// DataDir must not exist yet.
	DataDir string
	// Chown, when set, gives each restored path to the user PostgreSQL
	// runs as.
	Chown func(path string) error
	// Finish, when set, prepares the unpacked copy (in its temporary
	// folder) before it is renamed into place: what must happen before
	// the data directory first looks restored.
	Finish func(dir string) error
}

// restorePrefix names the temporary folders restores unpack into, beside
// the data directory; a restore cut off by a crash leaves one, which the
// next restore removes.
const restorePrefix = ".cairn-restore-"

// PostgresRestored is what a restore left out.
type PostgresRestored struct {
	// Dropped are the archive's entries outside PostgreSQL's data layout
	// (its configuration files among them), in the archive's order:
	// never written (pglayout.go).
	Dropped []string
}

// RestorePostgres brings base backup m back into r.DataDir: it unpacks
// the verified tar into a temporary folder beside it, keeping only
// PostgreSQL's data layout and writing the configuration files afresh
// (pglayout.go), finishes it, syncs it to disk and renames it into place
// only when all of it was written and its size and checksum match the
// manifest. The result starts as a consistent copy (it holds its WAL and
// backup_label). A failure, a full disk or a crash included, leaves no
// data directory behind; so does ctx's end, at any point before the
// rename (the temporary folder is removed; one a crash leaves is removed
// by the next restore and never started on).
func RestorePostgres(ctx context.Context, st Store, m Manifest, r PostgresRestore) (PostgresRestored, error) {
	if m.Kind != spec.PostgresKind {
		return PostgresRestored{}, fmt.Errorf("backup %s is of a %s, not a PostgreSQL cluster", m.ID, m.Kind)
	}
	tmp, err := restoreDir(r.DataDir)
	if err != nil {
		return PostgresRestored{}, err
	}
	var out PostgresRestored
	out.Dropped, err = restoreTar(ctx, st, m, tmp, r.Chown)
	if err == nil {
		err = writeRestoredConfig(tmp, r.Chown)
	}
	if err == nil {
		err = checkDataDir(tmp)
	}
	if err == nil && r.Finish != nil {
		err = r.Finish(tmp)
	}
	if err == nil {
		// A stop asked for (cairn restore's SIGTERM or SIGINT) while the
		// copy was finished puts nothing in place.
		err = ctx.Err()
	}
	if err == nil {
		err = renameSynced(tmp, r.DataDir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return PostgresRestored{}, fmt.Errorf("restore %s into %s: %w", m.ID, r.DataDir, err)
	}
	return out, nil
}

// restoreDir checks that dataDir does not exist, removes what earlier
// restores cut off by a crash left beside it, and makes a new temporary
// folder there to restore into.
func restoreDir(dataDir string) (string, error) {
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("restore into %s: it already exists", dataDir)
	}
	parent := filepath.Dir(dataDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("restore into %s: %w", dataDir, err)
	}
	stale, _ := filepath.Glob(filepath.Join(parent, restorePrefix+"*"))
	for _, d := range stale {
		if err := os.RemoveAll(d); err != nil {
			return "", fmt.Errorf("restore into %s: remove the leftover %s: %w", dataDir, d, err)
		}
	}
	tmp, err := os.MkdirTemp(parent, restorePrefix+"*")
	if err != nil {
		return "", fmt.Errorf("restore into %s: %w", dataDir, err)
	}
	return tmp, nil
}

// renameSynced flushes the restored files to disk, renames the folder
// into place and syncs its parent, so a crash leaves either no data
// directory or a whole one.
func renameSynced(tmp, dataDir string) error {
	syscall.Sync()
	if err := os.Rename(tmp, dataDir); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(dataDir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// restoreTar unpacks m's archive into dir, but for the entries outside
// PostgreSQL's data layout, which it returns.
func restoreTar(ctx context.Context, st Store, m Manifest, dir string, chown func(string) error) (dropped []string, err error) {
	data, err := OpenData(ctx, st, m)
	if err != nil {
		return nil, err
	}
	defer data.Close()
	if err := mkdir(dir, chown); err != nil {
		return nil, err
	}
	tr := tar.NewReader(contextReader{ctx, data})
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		kept, err := extract(tr, h, dir, chown)
		if err != nil {
			return nil, err
		}
		if !kept {
			dropped = append(dropped, h.Name)
		}
	}
	// Read to the end, so the size and checksum are checked.
	if _, err = io.Copy(io.Discard, data); err != nil {
		return nil, err
	}
	return dropped, nil
}

// extract writes entry h into dir when it is part of PostgreSQL's data
// layout (kept), and skips it otherwise.
func extract(tr *tar.Reader, h *tar.Header, dir string, chown func(string) error) (kept bool, err error) {
	name := filepath.Clean(filepath.FromSlash(h.Name))
	if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
		return false, fmt.Errorf("archive entry %q leaves the data directory", h.Name)
	}
	if ok, err := restoredEntry(name, h); !ok || err != nil {
		return false, err
	}
	return true, write(tr, h, filepath.Join(dir, name), name, chown)
}

// write writes entry h, a folder or a regular file, at p.
func write(tr *tar.Reader, h *tar.Header, p, name string, chown func(string) error) error {
	switch h.Typeflag {
	case tar.TypeDir:
		if name == "." {
			return nil
		}
		return mkdir(p, chown)
	case tar.TypeReg:
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("restore %s: %w", h.Name, err)
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && chown != nil {
			err = chown(p)
		}
		if err != nil {
			return fmt.Errorf("restore %s: %w", h.Name, err)
		}
		return nil
	}
	return fmt.Errorf("archive entry %q: type %q is not restored (tablespace links are not supported)", h.Name, h.Typeflag)
}

func mkdir(p string, chown func(string) error) error {
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("restore %s: %w", p, err)
	}
	if chown != nil {
		return chown(p)
	}
	return nil
}

// writeRestoredConfig writes restoredConfig into dir.
func writeRestoredConfig(dir string, chown func(string) error) error {
	for _, f := range restoredConfig {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
		if chown != nil {
			if err := chown(p); err != nil {
				return fmt.Errorf("write %s: %w", f.name, err)
			}
		}
	}
	return nil
}

// checkDataDir checks that a restored folder is a base backup's data
// directory.
func checkDataDir(dir string) error {
	for _, f := range []string{"PG_VERSION", "backup_label", "global/pg_control"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("the restored data directory has no %s: not a base backup", f)
		}
	}
	return nil
}
