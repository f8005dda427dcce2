package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var walClient struct {
	once sync.Once
	path string
	err  error
}

// WALClient is `cairn instance wal` for members the test beds run:
// testbed/walclient, built once a process into a folder the PostgreSQL
// user may run it from.
func WALClient(t testing.TB) string {
	t.Helper()
	walClient.once.Do(func() {
		dir, err := os.MkdirTemp("", "cairn-walclient-")
		if err != nil {
			walClient.err = err
			return
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			walClient.err = err
			return
		}
		walClient.path = filepath.Join(dir, "walclient")
		out, err := exec.Command("go", "build", "-o", walClient.path, "github.com/cairn-dev/cairn/testbed/walclient").CombinedOutput()
		if err != nil {
			walClient.err = &buildError{err, out}
		}
	})
	if walClient.err != nil {
		t.Fatalf("build the WAL client: %v", walClient.err)
	}
	return walClient.path
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }
