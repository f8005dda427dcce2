//go:build unix

package renderer

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownedByUs refuses a cache folder another user owns, or that its group
// or others may write: whoever may write it chooses what cairn commits.
func ownedByUs(dir string, info fs.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to this one (%d)", dir, st.Uid, os.Getuid())
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by its group or others (mode %v): make it 0700", dir, info.Mode().Perm())
	}
	return nil
}
