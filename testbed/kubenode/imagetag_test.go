package kubenode

import (
	"testing"

	"github.com/cairn-dev/cairn/testbed"
)

// The tag is read from the archive's manifest.json.
func TestImageTag(t *testing.T) {
	if _, err := testbed.FindBin("kubelet"); err != nil {
		t.Skip(err)
	}
	tag, v := ImageTag(t, "pause"), ImageVersion(t, "pause")
	if tag != "registry.k8s.io/pause:3.10" || v != "3.10" {
		t.Fatalf("pause: tag %q, version %q", tag, v)
	}
	if v := ImageVersion(t, "etcd-3.5"); len(v) < 5 || v[:4] != "3.5." {
		t.Fatalf("etcd-3.5: version %q", v)
	}
}
