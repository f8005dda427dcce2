package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/version"
)

// renderCacheOptions choose the render cache on disk (renderer.DiskCache,
// docs/scale.md): on by default for cairn propose, a process a CI job
// starts on every push, so that a pass renders only what changed since
// the last; off by default for cairn reconcile, whose loop keeps its
// renders in memory across passes.
type renderCacheOptions struct {
	dir      string
	off      bool
	limitMiB int64
	// byDefault: with no --render-cache, the user's cache folder is used.
	byDefault bool
}

func (o *renderCacheOptions) flags(f *pflag.FlagSet, byDefault bool) {
	o.byDefault = byDefault
	where := "a folder to keep renders in across runs (off unless set)"
	if byDefault {
		where = "folder to keep renders in across runs (default: $XDG_CACHE_HOME/cairn/render, or ~/.cache/cairn/render)"
		f.BoolVar(&o.off, "no-render-cache", false, "render every step afresh, reading and writing no render cache")
	}
	f.StringVar(&o.dir, "render-cache", "", where)
	f.Int64Var(&o.limitMiB, "render-cache-mib", renderer.DefaultDiskCacheLimit>>20, "the render cache's largest size in MiB: entries used longest ago are removed past it")
}

// folder is the cache's folder; "" when there is none.
func (o renderCacheOptions) folder() (string, error) {
	switch {
	case o.off:
		return "", nil
	case o.dir != "":
		return o.dir, nil
	case !o.byDefault:
		return "", nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "cairn", "render"), nil
}

// open opens the render cache for r; nil when it is off. A cache that
// cannot be used is no reason to fail a command: it warns on errw and
// renders everything, as without one.
func (o renderCacheOptions) open(r *renderer.Renderer, errw io.Writer) *renderer.DiskCache {
	dir, err := o.folder()
	if err != nil {
		fmt.Fprintf(errw, "cairn: warning: no render cache: %v\n", err)
		return nil
	}
	if dir == "" {
		return nil
	}
	id := version.Identity()
	if id == nil {
		fmt.Fprintln(errw, "cairn: warning: no render cache: this build of cairn has no build ID or clean commit to key it by")
		return nil
	}
	if o.limitMiB <= 0 {
		fmt.Fprintf(errw, "cairn: warning: no render cache: --render-cache-mib must be positive, got %d\n", o.limitMiB)
		return nil
	}
	d, err := renderer.OpenDiskCache(dir, o.limitMiB<<20, r, id)
	if err != nil {
		fmt.Fprintf(errw, "cairn: warning: no render cache: %v\n", err)
		return nil
	}
	return d
}

// trimRenderCache keeps the cache's folder within its limit at the end of
// a command, warning when it cannot.
func trimRenderCache(d *renderer.DiskCache, errw io.Writer) {
	if d == nil {
		return
	}
	if _, err := d.Trim(); err != nil {
		fmt.Fprintf(errw, "cairn: warning: render cache: %v\n", err)
	}
}

// renderCounts says what a pass rendered and what it read back, for -v.
func renderCounts(c *renderer.Cache) string {
	s := c.Stats()
	return fmt.Sprintf("renders: %d rendered, %d read from the render cache on disk, %d from memory\n", s.Misses, s.DiskHits, s.Hits)
}
