package instance

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// MoveAside renames dir to <dir>.stale-<unix time>, saying why in the
// log: cairn never deletes a database's data on its own.
func MoveAside(dir string, log *slog.Logger, why string) error {
	dest := fmt.Sprintf("%s.stale-%d", strings.TrimRight(dir, "/"), time.Now().Unix())
	log.Warn(why, "moved_to", dest)
	if err := os.Rename(dir, dest); err != nil {
		return fmt.Errorf("move data aside: %w", err)
	}
	return nil
}

// Exists reports whether path exists; an error other than its absence
// is returned.
func Exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
