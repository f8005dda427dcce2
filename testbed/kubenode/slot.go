package kubenode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// slotDir holds one folder per slot in use, with the pid of the test
// process that took it.
const slotDir = "/run/cairn-kubenode"

// slots is how many nodes can run at once on one machine.
const slots = 200

// slot is a node's share of the machine: its names and addresses.
type slot int

func (s slot) netns() string       { return fmt.Sprintf("cairn-node-%d", s) }
func (s slot) hostLink() string    { return fmt.Sprintf("cnode%dh", s) }
func (s slot) nodeLink() string    { return fmt.Sprintf("cnode%dn", s) }
func (s slot) hostIP() string      { return fmt.Sprintf("10.250.%d.1", s) }
func (s slot) nodeIP() string      { return fmt.Sprintf("10.250.%d.2", s) }
func (s slot) podCIDR() string     { return fmt.Sprintf("10.244.%d.0/24", s) }
func (s slot) podPrefix() string   { return fmt.Sprintf("10.244.%d.", s) }
func (s slot) serviceCIDR() string { return fmt.Sprintf("10.251.%d.0/24", s) }
func (s slot) dnsIP() string       { return fmt.Sprintf("10.251.%d.10", s) }
func (s slot) cgroup() string      { return fmt.Sprintf("cairn-node-%d", s) }
func (s slot) lanNetns() string    { return fmt.Sprintf("cairn-lan-%d", s) }
func (s slot) lanPort() string     { return fmt.Sprintf("n%d", s) }
func (s slot) lanIP() string       { return fmt.Sprintf("10.252.%d.1", s) }
func (s slot) dir() string         { return filepath.Join(slotDir, strconv.Itoa(int(s))) }

// takeSlot takes the first free slot, or one whose test process has died
// (after cleaning what that test left). mkdir is the lock: it fails when
// another process holds the slot.
func takeSlot() (slot, error) {
	if err := os.MkdirAll(slotDir, 0o700); err != nil {
		return 0, fmt.Errorf("slots: %w", err)
	}
	for i := range slots {
		s := slot(i)
		err := os.Mkdir(s.dir(), 0o700)
		if errors.Is(err, os.ErrExist) {
			if alive(s) {
				continue
			}
			// Left by a test process that died: clean it and take it.
			// Two processes may find it at once; the rename decides.
			stale := fmt.Sprintf("%s.stale-%d", s.dir(), os.Getpid())
			if os.Rename(s.dir(), stale) != nil {
				continue
			}
			cleanSlot(s, stale)
			_ = os.RemoveAll(stale)
			err = os.Mkdir(s.dir(), 0o700)
		}
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(s.dir(), "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			_ = os.RemoveAll(s.dir())
			return 0, fmt.Errorf("slot %d: %w", i, err)
		}
		return s, nil
	}
	return 0, fmt.Errorf("all %d node slots under %s are in use", slots, slotDir)
}

// alive reports that the process holding s still runs. A slot whose pid
// file is not written yet counts as alive for a minute: its taker is
// between mkdir and the write.
func alive(s slot) bool {
	data, err := os.ReadFile(filepath.Join(s.dir(), "pid"))
	if errors.Is(err, os.ErrNotExist) {
		fi, err := os.Stat(s.dir())
		return err == nil && time.Since(fi.ModTime()) < time.Minute
	}
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM)
}

// release gives s back.
func release(s slot) { _ = os.RemoveAll(s.dir()) }
