package spec

import (
	"errors"
	"os"
	"syscall"
)

// The magic numbers of the kernel's own file systems (statfs(2)).
const (
	procMagic  = 0x9fa0
	sysfsMagic = 0x62656572
)

// kernelFile refuses a file of /proc or /sys: stat calls many of them
// regular files of 0 bytes, and some are read destructively (/proc/kmsg
// hands each message to one reader only) or wait for data.
func kernelFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var st syscall.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return nil
	}
	if st.Type == procMagic || st.Type == sysfsMagic {
		return errors.New("a file of /proc or /sys, not a spec")
	}
	return nil
}
