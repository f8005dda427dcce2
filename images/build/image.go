package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// An imageSpec is one image to write: its layers (bottom first), its
// config and the tag the archive names it by (one: the archive's
// RepoTags would come in map order with more).
type imageSpec struct {
	tag    string
	layers []*tree
	config v1.Config
}

// write writes the image as a docker-archive (manifest.json with
// RepoTags, the config and gzipped layers), which `ctr images import`
// and `kind load image-archive` both read. Every date in it is created,
// so the same spec gives the same bytes. Layers are staged as files in
// scratch, which the caller removes.
func (s imageSpec) write(out, scratch string, created time.Time) error {
	var layers []v1.Layer
	for i, t := range s.layers {
		p := filepath.Join(scratch, fmt.Sprintf("layer-%d.tar", i))
		if err := writeFile(p, func(w io.Writer) error { return t.writeTar(w, created) }); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
		l, err := tarball.LayerFromFile(p)
		if err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return fmt.Errorf("append layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = s.config
	cf.Created = v1.Time{Time: created}
	cf.History = nil
	for range layers {
		cf.History = append(cf.History, v1.History{Created: v1.Time{Time: created}, CreatedBy: "cairn images/build"})
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	tag, err := name.NewTag(s.tag, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("tag %q: %w", s.tag, err)
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}

// writeFile writes a file through fill, removing it when fill fails.
func writeFile(p string, fill func(io.Writer) error) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		os.Remove(p)
		return err
	}
	return f.Close()
}
