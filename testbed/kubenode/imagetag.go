package kubenode

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// ImageTag is the tag of the image archive `make image` built as name
// ("postgres-15" -> "docker.io/library/postgres:15.20"): what the
// archive's manifest.json says, so that a test asks for the release the
// build took from Debian, not the one it was written against.
func ImageTag(t testing.TB, name string) string {
	t.Helper()
	tag, err := archiveTag(Image(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// ImageVersion is the version part of ImageTag ("15.20").
func ImageVersion(t testing.TB, name string) string {
	t.Helper()
	tag := ImageTag(t, name)
	return strings.TrimPrefix(tag[strings.LastIndex(tag, ":")+1:], "v")
}

// archiveTag reads the one tag of a docker-archive image.
func archiveTag(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("image archive %s: no manifest.json", path)
		}
		if err != nil {
			return "", fmt.Errorf("image archive %s: %w", path, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
			return "", fmt.Errorf("image archive %s: manifest.json: %w", path, err)
		}
		if len(m) != 1 || len(m[0].RepoTags) != 1 {
			return "", fmt.Errorf("image archive %s: want one image with one tag, manifest.json has %+v", path, m)
		}
		return m[0].RepoTags[0], nil
	}
}
