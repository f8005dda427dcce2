package contract

import (
	"regexp"
	"strings"
	"testing"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// The check Job's name is a label value of its pod (job-name): a DNS
// label of at most 63 characters for the longest cluster name (52) and
// every major cairn accepts.
func TestUpgradeCheckJobNameFitsALabel(t *testing.T) {
	longest := strings.Repeat("a", 52)
	for from := 13; from < 18; from++ {
		for to := from + 1; to <= 18; to++ {
			name := PGUpgradeCheckJob(longest, from, to)
			if !dnsLabel.MatchString(name) {
				t.Errorf("%s (%d characters) is not a DNS label", name, len(name))
			}
		}
	}
}
