package renderer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// ImageDigests pin images by digest: each key is an image as the
// renderer names it by tag ("ghcr.io/cairn-dev/cairn:v0.2.0"), its value
// the digest of the image's manifest (or index) in the registry
// ("sha256:<64 hex digits>"). The renderer then writes the image as
// "<name>:<tag>@<digest>": the runtime pulls the digest, and a reader
// still sees the tag. An image not in the map stays by tag.
type ImageDigests map[string]string

// ImageDigestsFile is the file `cairn render --image-digests` reads (YAML
// or JSON), as the release workflow publishes it beside the binaries:
//
//	images:
//	  ghcr.io/cairn-dev/cairn:v0.2.0: sha256:0123...
type ImageDigestsFile struct {
	// Images maps each image by tag to its digest.
	Images ImageDigests `json:"images"`
}

// MaxImageDigestsFile bounds the size of an image digests file.
const MaxImageDigestsFile = 1 << 20

// ParseImageDigests decodes an image digests file named file (for
// errors) and checks every entry: unknown fields, a key that is not an
// image by tag, or a value that is not a sha256 digest is an error
// naming the file and the key.
func ParseImageDigests(file string, data []byte) (ImageDigests, error) {
	if len(data) > MaxImageDigestsFile {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d an image digests file may have", file, len(data), MaxImageDigestsFile)
	}
	var f ImageDigestsFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(f.Images) == 0 {
		return nil, fmt.Errorf("%s: no images: want a map images: {<name>:<tag>: sha256:<digest>}", file)
	}
	if err := f.Images.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return f.Images, nil
}

// Validate checks every entry, in the keys' order: each key an image
// reference with a tag and no digest, each value "sha256:" and 64
// lowercase hex digits.
func (d ImageDigests) Validate() error {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		if err := checkTagged(k); err != nil {
			errs = append(errs, fmt.Errorf("images[%q]: %w", k, err))
			continue
		}
		if err := checkDigest(d[k]); err != nil {
			errs = append(errs, fmt.Errorf("images[%q]: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// pin is ref with its digest appended, when d has one for it; a ref that
// already names a digest is kept.
func (d ImageDigests) pin(ref string) string {
	if strings.Contains(ref, "@") {
		return ref
	}
	if dg, ok := d[ref]; ok {
		return ref + "@" + dg
	}
	return ref
}

// checkTagged checks that ref names an image by tag: a repository, then
// ":" and a tag after the last "/", with no digest.
func checkTagged(ref string) error {
	if ref == "" || strings.ContainsAny(ref, " \t\r\n@") {
		return fmt.Errorf("want an image by tag such as ghcr.io/cairn-dev/cairn:v0.2.0, without spaces or a digest")
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	i := strings.LastIndex(last, ":")
	if i <= 0 || i == len(last)-1 {
		return fmt.Errorf("no tag: want <repository>:<tag>, as the renderer names the image")
	}
	return nil
}

// checkDigest checks a manifest digest: "sha256:" and 64 lowercase hex
// digits.
func checkDigest(d string) error {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return fmt.Errorf("digest %q: want sha256: and 64 lowercase hex digits", d)
	}
	return nil
}
