package renderer

import (
	"path/filepath"
	"strings"
	"testing"
)

// digestsFor are made-up digests of the images the pinned golden trees
// name: the cairn image, PostgreSQL 14.5 and 15.4, the 14-to-15
// pg_upgrade image and etcd 3.3.27 and 3.4.37.
var digestsFor = ImageDigests{
	DefaultOptions.CairnImage:                              "sha256:" + strings.Repeat("c", 64),
	"docker.io/library/postgres:14.5":                      "sha256:" + strings.Repeat("1", 64),
	"docker.io/library/postgres:15.4":                      "sha256:" + strings.Repeat("2", 64),
	"ghcr.io/cairn-dev/postgres-upgrade:14-to-15":          "sha256:" + strings.Repeat("3", 64),
	"quay.io/coreos/etcd:v3.4.37":                          "sha256:" + strings.Repeat("4", 64),
	"quay.io/coreos/etcd:v3.3.27":                          "sha256:" + strings.Repeat("5", 64),
	"docker.io/library/postgres:9.6-not-rendered-anywhere": "sha256:" + strings.Repeat("6", 64),
}

// Rendered with a digest map, every image the map names is written as
// name:tag@digest (the tag kept for readers), in the base and the steps:
// a cluster's create, a major upgrade (its pg_upgrade image) and an etcd
// minor upgrade. An image the map lacks stays by tag.
func TestGoldenTreesPinnedByDigest(t *testing.T) {
	r, err := New(Options{ImageDigests: digestsFor}, Etcd(), Postgres())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pg-create", "pg-major-upgrade", "etcd-upgrade"} {
		t.Run(name, func(t *testing.T) {
			var rc renderCase
			for _, c := range renderCases {
				if c.name == name {
					rc = c
				}
			}
			c, p := loadCase(t, rc)
			tree, _, err := r.Render(c, p, rc.step)
			if err != nil {
				t.Fatal(err)
			}
			checkGoldenTree(t, tree, filepath.Join("testdata", "digests-"+name), c.Ref().Name)
			// Every image line of the tree is pinned: the map names them all.
			for _, path := range tree.Paths() {
				for _, line := range strings.Split(string(tree[path]), "\n") {
					if l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")); strings.HasPrefix(l, "image: ") && !strings.Contains(l, "@sha256:") {
						t.Errorf("%s: %s is not pinned by digest", path, l)
					}
				}
			}
		})
	}
}

func TestImageDigestsPin(t *testing.T) {
	d := ImageDigests{"quay.io/coreos/etcd:v3.5.21": "sha256:" + strings.Repeat("a", 64)}
	o := Options{ImageDigests: d}
	for _, tc := range []struct{ got, want string }{
		{must(o.EtcdImage("3.5.21")), "quay.io/coreos/etcd:v3.5.21@sha256:" + strings.Repeat("a", 64)},
		{must(o.EtcdImage("3.5.26")), "quay.io/coreos/etcd:v3.5.26"},
		{must(Options{}.EtcdImage("3.5.21")), "quay.io/coreos/etcd:v3.5.21"},
		{d.pin("quay.io/coreos/etcd:v3.5.21@sha256:" + strings.Repeat("b", 64)), "quay.io/coreos/etcd:v3.5.21@sha256:" + strings.Repeat("b", 64)},
		{Options{CairnImage: "r/cairn:dev", ImageDigests: ImageDigests{"r/cairn:dev": "sha256:" + strings.Repeat("d", 64)}}.withDefaults().CairnImage, "r/cairn:dev@sha256:" + strings.Repeat("d", 64)},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestParseImageDigests(t *testing.T) {
	good := "sha256:" + strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name, data string
		want       ImageDigests
		wantErr    string
	}{
		{"yaml", "images:\n  ghcr.io/cairn-dev/cairn:v0.2.0: " + good + "\n  quay.io/coreos/etcd:v3.5.21: " + good + "\n",
			ImageDigests{"ghcr.io/cairn-dev/cairn:v0.2.0": good, "quay.io/coreos/etcd:v3.5.21": good}, ""},
		{"json", `{"images": {"localhost:5000/cairn:v0.2.0": "` + good + `"}}`, ImageDigests{"localhost:5000/cairn:v0.2.0": good}, ""},
		{"short digest", "images:\n  ghcr.io/cairn-dev/cairn:v0.2.0: sha256:abc\n", nil,
			`digests.yaml: images["ghcr.io/cairn-dev/cairn:v0.2.0"]: digest "sha256:abc": want sha256: and 64 lowercase hex digits`},
		{"upper-case digest", "images:\n  ghcr.io/cairn-dev/cairn:v0.2.0: sha256:" + strings.Repeat("AB", 32) + "\n", nil,
			`digests.yaml: images["ghcr.io/cairn-dev/cairn:v0.2.0"]: digest`},
		{"other algorithm", "images:\n  ghcr.io/cairn-dev/cairn:v0.2.0: sha512:" + strings.Repeat("ab", 32) + "\n", nil,
			`images["ghcr.io/cairn-dev/cairn:v0.2.0"]: digest "sha512:`},
		{"no tag", "images:\n  ghcr.io/cairn-dev/cairn: " + good + "\n", nil,
			`digests.yaml: images["ghcr.io/cairn-dev/cairn"]: no tag`},
		{"registry port is no tag", "images:\n  localhost:5000/cairn: " + good + "\n", nil, `images["localhost:5000/cairn"]: no tag`},
		{"a digest in the key", "images:\n  ghcr.io/cairn-dev/cairn:v0.2.0@" + good + ": " + good + "\n", nil, "without spaces or a digest"},
		{"unknown field", "image:\n  ghcr.io/cairn-dev/cairn:v0.2.0: " + good + "\n", nil, `digests.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field "image"`},
		{"empty", "", nil, "digests.yaml: no images"},
		{"every bad entry is named", "images:\n  a:1: x\n  b: " + good + "\n", nil, "images[\"a:1\"]: digest \"x\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseImageDigests("digests.yaml", []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: got %q, want %q", k, got[k], v)
				}
			}
		})
	}
	if _, err := New(Options{ImageDigests: ImageDigests{"x:1": "sha256:1"}}, Etcd()); err == nil || !strings.Contains(err.Error(), `image digests: images["x:1"]`) {
		t.Errorf("New with a bad digest: %v", err)
	}
}
