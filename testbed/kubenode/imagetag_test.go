package kubenode

import (
	"testing"

	"github.com/cairn-dev/cairn/testbed"
)

// The tag is read from the archive's manifest.json. The archives are
// what `make image` builds for the real nodes, so the test is of the e2e
// tier: `make test` builds them beside the integration tier, and only
// the e2e tier runs after them.
func TestRealNodeImageTag(t *testing.T) {
	testbed.Require(t, testbed.TierE2E, "the image archives `make image` builds")
	tag, v := ImageTag(t, "pause"), ImageVersion(t, "pause")
	if tag != "registry.k8s.io/pause:3.10" || v != "3.10" {
		t.Fatalf("pause: tag %q, version %q", tag, v)
	}
	if v := ImageVersion(t, "etcd-3.5"); len(v) < 5 || v[:4] != "3.5." {
		t.Fatalf("etcd-3.5: version %q", v)
	}
}
