package main

import (
	"strings"
	"testing"
)

// A leader lease the leader could not renew in time is refused before
// the runtime starts.
func TestRuntimeLeaderLeaseTooShort(t *testing.T) {
	code, _, errOut := cairn(t, "runtime", "--kind", "PostgresCluster", "--cluster", "pg", "--leader-lease", "1s")
	if code != exitUsage || !strings.Contains(errOut, "--leader-lease 1s: at least 4s") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
