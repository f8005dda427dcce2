package kubenode

import (
	"bytes"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// ImageDigests are the images the cluster's nodes hold, each by tag
// ("ghcr.io/cairn-dev/cairn:v0.1.0") with the digest of its manifest
// ("sha256:..."), as containerd made them when it imported the archives
// `make image` built: what a release's image digests file says of the
// images it pushed (renderer.ImageDigests). Every running node must hold
// the same images with the same digests (each imports the same
// archives); only images each holds under its digest name too
// (importImage) are listed, so that a pod naming one by digest finds it
// on any node, nothing pulled.
func (c *Cluster) ImageDigests(t testing.TB) map[string]string {
	t.Helper()
	var first map[string]string
	for _, n := range c.Nodes {
		if n.Stopped() {
			continue
		}
		got, err := n.imageDigests()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = got
		} else if !maps.Equal(first, got) {
			t.Fatalf("node %s holds the images %v, %s %v", n.Name, got, c.Nodes[0].Name, first)
		}
	}
	if len(first) == 0 {
		t.Fatal("no running node holds an image by its digest")
	}
	return first
}

// imageDigests lists the node's images by tag with their manifests'
// digests (`ctr images ls`), those it holds under their digest names.
func (n *Node) imageDigests() (map[string]string, error) {
	l, err := n.images()
	if err != nil {
		return nil, err
	}
	return l.byDigest(), nil
}

// nameByDigest names each image the node holds by tag by its manifest's
// digest too (<repository>@sha256:...), as a pull by digest names it:
// `ctr images import` names an image by the tag its archive gives only
// (its --digests makes names of its own, import-<date>@sha256:...).
// containerd's CRI then knows the image by that digest, and a pod that
// names it by digest (ImageDigests) finds it on the node.
func (n *Node) nameByDigest() error {
	l, err := n.images()
	if err != nil {
		return err
	}
	for _, ref := range slices.Sorted(maps.Keys(l.tagged)) {
		name := l.digestName(ref)
		if l.named[name] {
			continue
		}
		out, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "images", "tag", ref, name).CombinedOutput()
		if err != nil {
			return fmt.Errorf("node %s: ctr images tag %s %s: %v: %s", n.Name, ref, name, err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// images is the node's `ctr images ls`.
func (n *Node) images() (imageList, error) {
	out, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "images", "ls").CombinedOutput()
	if err != nil {
		return imageList{}, fmt.Errorf("node %s: ctr images ls: %v: %s", n.Name, err, bytes.TrimSpace(out))
	}
	return parseImageList(n.Name, string(out))
}

// imageList is what `ctr images ls` lists: the names by tag with their
// digests, and the names by digest.
type imageList struct {
	tagged map[string]string
	named  map[string]bool
}

// digestName is the name by digest of an image named by tag ref.
func (l imageList) digestName(ref string) string {
	return ref[:strings.LastIndexByte(ref, ':')] + "@" + l.tagged[ref]
}

// byDigest are the names by tag whose image is also named by its digest.
func (l imageList) byDigest() map[string]string {
	out := map[string]string{}
	for ref, digest := range l.tagged {
		if l.named[l.digestName(ref)] {
			out[ref] = digest
		}
	}
	return out
}

// parseImageList reads `ctr images ls`: a header, then a line per image
// name (REF TYPE DIGEST SIZE PLATFORMS LABELS): names by tag, names by
// digest (<repository>@<digest>, the digest the line's), and names by
// config ID (sha256:...), which are neither.
func parseImageList(node, list string) (imageList, error) {
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "REF") {
		return imageList{}, fmt.Errorf("node %s: ctr images ls printed no header: %q", node, list)
	}
	l := imageList{tagged: map[string]string{}, named: map[string]bool{}}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[2], "sha256:") {
			return imageList{}, fmt.Errorf("node %s: ctr images ls: a line without a digest: %q", node, line)
		}
		ref, digest := f[0], f[2]
		switch {
		case strings.HasPrefix(ref, "sha256:"):
		case strings.Contains(ref, "@"):
			if strings.HasSuffix(ref, "@"+digest) {
				l.named[ref] = true
			}
		case strings.LastIndexByte(ref, ':') < strings.LastIndexByte(ref, '/'):
			return imageList{}, fmt.Errorf("node %s: ctr images ls: the image %q has no tag", node, ref)
		default:
			l.tagged[ref] = digest
		}
	}
	return l, nil
}
