package kubenode

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// What `ctr images ls` prints on a node (containerd 1.6): one image,
// imported and named by its digest (nameByDigest), under a name by tag,
// by digest and by config ID.
const ctrImagesLs = `REF                                                                     TYPE                                                 DIGEST                                                                  SIZE      PLATFORMS   LABELS
ghcr.io/cairn-dev/cairn:v0.1.0                                          application/vnd.docker.distribution.manifest.v2+json sha256:06fe80fd7a731967901e770374ba33ced467770d48c9debe46c02e5dc9c4a1f6 26.8 MiB  linux/amd64 io.cri-containerd.image=managed
ghcr.io/cairn-dev/cairn@sha256:06fe80fd7a731967901e770374ba33ced467770d48c9debe46c02e5dc9c4a1f6 application/vnd.docker.distribution.manifest.v2+json sha256:06fe80fd7a731967901e770374ba33ced467770d48c9debe46c02e5dc9c4a1f6 26.8 MiB  linux/amd64 io.cri-containerd.image=managed
sha256:16fa93f3b5c3f564d90779ad31dfbf8fd4ecbaf203e64d2dd2c89bf353006f27 application/vnd.docker.distribution.manifest.v2+json sha256:06fe80fd7a731967901e770374ba33ced467770d48c9debe46c02e5dc9c4a1f6 26.8 MiB  linux/amd64 io.cri-containerd.image=managed
`

func TestParseImageList(t *testing.T) {
	const cairn = "sha256:06fe80fd7a731967901e770374ba33ced467770d48c9debe46c02e5dc9c4a1f6"
	for _, c := range []struct {
		name, out string
		want      map[string]string
		err       string
	}{
		{name: "a tag and its digest name", out: ctrImagesLs, want: map[string]string{"ghcr.io/cairn-dev/cairn:v0.1.0": cairn}},
		{name: "no digest name yet",
			out: strings.Join(slices.Delete(strings.Split(ctrImagesLs, "\n"), 2, 3), "\n"), want: map[string]string{}},
		{name: "a digest name of another digest",
			out: strings.Replace(ctrImagesLs, "cairn@sha256:06fe", "cairn@sha256:16fe", 1), want: map[string]string{}},
		{name: "no header", out: "x y sha256:1\n", err: "no header"},
		{name: "a line without a digest", out: "REF TYPE DIGEST\nfoo:1 t nope\n", err: "without a digest"},
		{name: "a name without a tag", out: "REF TYPE DIGEST\nlocalhost:5000/foo t sha256:1\n", err: "has no tag"},
		{name: "a registry port and a tag", out: "REF TYPE DIGEST\nlocalhost:5000/foo:1 t sha256:1\nlocalhost:5000/foo@sha256:1 t sha256:1\n",
			want: map[string]string{"localhost:5000/foo:1": "sha256:1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := parseImageList("node-0", c.out)
			got := l.byDigest()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "node-0") {
					t.Fatalf("error %v, want one naming node-0 and saying %q", err, c.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// The name nameByDigest gives an image is its repository (a registry's
// port kept) and its manifest's digest.
func TestDigestName(t *testing.T) {
	l := imageList{tagged: map[string]string{"ghcr.io/cairn-dev/cairn:v0.1.0": "sha256:1", "localhost:5000/a/b:2": "sha256:2"}}
	for ref, want := range map[string]string{"ghcr.io/cairn-dev/cairn:v0.1.0": "ghcr.io/cairn-dev/cairn@sha256:1", "localhost:5000/a/b:2": "localhost:5000/a/b@sha256:2"} {
		if got := l.digestName(ref); got != want {
			t.Errorf("%s: %s, want %s", ref, got, want)
		}
	}
}
