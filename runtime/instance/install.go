package instance

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Install copies the running executable to dest (mode 0755), so the
// database container can run the instance manager from a shared volume.
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".cairn-install-*")
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("install: %w", err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("install: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	return nil
}
