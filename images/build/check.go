package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The programs check runs from an image, each with the argument that
// prints its version.
var checkedPrograms = []struct{ glob, arg string }{
	{"cairn", "version"},
	{"pause", "--version"},
	{"usr/local/bin/etcd", "--version"},
	{"usr/lib/postgresql/*/bin/postgres", "--version"},
	{"usr/lib/postgresql/*/bin/pg_upgrade", "--version"},
	{"usr/lib/postgresql/*/bin/initdb", "--version"},
	{"usr/lib/postgresql/*/bin/pg_isready", "--version"},
}

// checkArchive loads an archive as `ctr images import` would read it,
// unpacks the image into a scratch directory and proves it runs without
// a chroot: no ELF file in it needs a library the image lacks, and its
// programs print their versions through the image's own dynamic loader
// and libraries. It returns one line per program run.
func checkArchive(ctx context.Context, archive, scratch string) ([]string, error) {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", archive, err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 {
		return nil, fmt.Errorf("%s: want one image with one tag, got %+v", archive, m)
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", archive, err)
	}
	root := filepath.Join(scratch, "root")
	if err := unpack(img, root); err != nil {
		return nil, fmt.Errorf("unpack %s: %w", archive, err)
	}
	missing, err := missingLibs(root)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: libraries not in the image:\n  %s", m[0].RepoTags[0], strings.Join(missing, "\n  "))
	}
	out := []string{m[0].RepoTags[0]}
	for _, p := range checkedPrograms {
		bins, _ := filepath.Glob(filepath.Join(root, p.glob))
		for _, b := range bins {
			line, err := runInImage(ctx, root, b, p.arg)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, b)
			out = append(out, fmt.Sprintf("  /%s: %s", rel, line))
		}
	}
	if len(out) == 1 {
		return nil, fmt.Errorf("%s: no program to run", archive)
	}
	return out, nil
}

// runInImage runs bin (a file of the unpacked image at root) with arg:
// a dynamic program through the image's loader (its PT_INTERP, resolved
// inside root) with the image's library directories first.
func runInImage(ctx context.Context, root, bin, arg string) (string, error) {
	ef, err := elf.Open(bin)
	if err != nil {
		return "", fmt.Errorf("%s: %w", bin, err)
	}
	var interp string
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	ef.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, arg)
	if interp != "" {
		ld, err := resolveIn(root, interp)
		if err != nil {
			return "", fmt.Errorf("%s: loader %s: %w", bin, interp, err)
		}
		libs := []string{}
		for _, d := range systemLibDirs {
			libs = append(libs, filepath.Join(root, d))
		}
		cmd = exec.CommandContext(ctx, filepath.Join(root, ld), "--inhibit-cache", "--library-path", strings.Join(libs, ":"), bin, arg)
	}
	cmd.Env = []string{"LANG=C.UTF-8", "PATH=/nonexistent"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", bin, arg, err, strings.TrimSpace(stderr.String()))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line, nil
}

// unpack writes the image's flattened file system under root: regular
// files, directories and links, none outside root.
func unpack(img v1.Image, root string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		dst := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, dst)
		case tar.TypeLink:
			err = os.Link(filepath.Join(root, path.Clean("/"+h.Linkname)), dst)
		case tar.TypeReg:
			err = writeFile(dst, func(w io.Writer) error { _, err := io.Copy(w, tr); return err })
			if err == nil {
				err = os.Chmod(dst, os.FileMode(h.Mode).Perm())
			}
		default:
			err = fmt.Errorf("%s: unexpected type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}
