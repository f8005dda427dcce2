package main

import (
	"fmt"
	"io"
	"os"

	"github.com/cairn-dev/cairn/renderer"
)

// imageDigestsFlag is --image-digests FILE: an image digests file
// (renderer.ImageDigestsFile, the release's image-digests.yaml), read and
// checked when the flag is parsed, into the renderer's options.
type imageDigestsFlag struct {
	path string
	into *renderer.Options
}

func (f *imageDigestsFlag) String() string { return f.path }
func (f *imageDigestsFlag) Type() string   { return "file" }

func (f *imageDigestsFlag) Set(path string) error {
	d, err := readImageDigests(path)
	if err != nil {
		return err
	}
	f.path, f.into.ImageDigests = path, d
	return nil
}

// readImageDigests reads and checks an image digests file, bounded in
// size.
func readImageDigests(path string) (renderer.ImageDigests, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, renderer.MaxImageDigestsFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return renderer.ParseImageDigests(path, data)
}
