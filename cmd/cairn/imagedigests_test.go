package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/renderer"
)

// cairn render --image-digests FILE writes the images the file names as
// name:tag@digest; a bad file is refused before anything is written,
// naming the file and the entry.
func TestRenderImageDigests(t *testing.T) {
	spec, err := os.ReadFile("../../examples/fleet/clusters/my-etcd-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cairnDigest, etcdDigest := "sha256:"+strings.Repeat("c", 64), "sha256:"+strings.Repeat("e", 64)
	etcdImage, err := renderer.DefaultOptions.EtcdImage("3.2.13")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "image-digests.yaml")
	if err := os.WriteFile(good, []byte("images:\n  "+renderer.DefaultOptions.CairnImage+": "+cairnDigest+"\n  "+etcdImage+": "+etcdDigest+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("images:\n  "+etcdImage+": sha256:1234\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	repo := writeRepo(t, map[string]string{"clusters/my-etcd-cluster.yaml": string(spec)})
	if code, out, errOut := cairn(t, "render", "--repo", repo, "--image-digests", good); code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	sts, err := os.ReadFile(filepath.Join(repo, "rendered", "my-etcd-cluster", "steps", "create", "statefulset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"image: " + etcdImage + "@" + etcdDigest, "image: " + renderer.DefaultOptions.CairnImage + "@" + cairnDigest} {
		if !strings.Contains(string(sts), want) {
			t.Errorf("no %q in the rendered StatefulSet:\n%s", want, sts)
		}
	}

	for _, tc := range []struct{ file, want string }{
		{bad, bad + `: images["` + etcdImage + `"]: digest "sha256:1234": want sha256: and 64 lowercase hex digits`},
		{filepath.Join(dir, "missing.yaml"), "missing.yaml: no such file or directory"},
	} {
		out := t.TempDir()
		code, stdout, errOut := cairn(t, "render", "--repo", repo, "--out", out, "--image-digests", tc.file)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--image-digests") {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, errOut, exitUsage, tc.want)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("a refused render wrote %d entries", len(entries))
		}
	}
}
