package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  imagebuild resolve -lists DIR PACKAGE...        name=version of PACKAGE... and the libraries they need
  imagebuild cairn -bin FILE -base ROOT -out TAR
  imagebuild etcd -bin FILE -base ROOT -out TAR
  imagebuild postgres -root ROOT -out TAR
  imagebuild postgres-upgrade -from ROOT -to ROOT -out TAR
  imagebuild pause -bin FILE -out TAR              the test node's pod sandbox
  imagebuild check TAR...`

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	lists := fs.String("lists", "", "apt lists directory holding the suite's Packages files")
	bin := fs.String("bin", "", "the program the image carries")
	base := fs.String("base", "", "an unpacked Debian root: the C library, ca-certificates")
	root := fs.String("root", "", "an unpacked Debian root with one PostgreSQL major")
	from := fs.String("from", "", "the unpacked root of the major pg_upgrade upgrades from")
	to := fs.String("to", "", "the unpacked root of the major pg_upgrade upgrades to")
	out := fs.String("out", "", "the archive to write")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "resolve":
		return resolveCmd(*lists, fs.Args())
	case "check":
		return checkCmd(ctx, fs.Args())
	}
	spec, err := buildSpec(ctx, args[0], *bin, *base, *root, *from, *to)
	if err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("-out is required")
	}
	return writeImage(spec, *out)
}

func buildSpec(ctx context.Context, kind, bin, base, root, from, to string) (imageSpec, error) {
	switch kind {
	case "cairn":
		return cairnImage(bin, base)
	case "etcd":
		v, err := etcdVersion(ctx, bin)
		if err != nil {
			return imageSpec{}, err
		}
		return etcdImage(bin, base, v)
	case "postgres":
		return postgresImage(root)
	case "postgres-upgrade":
		return upgradeImage(from, to)
	case "pause":
		return pauseImage(bin)
	}
	return imageSpec{}, fmt.Errorf("unknown image %q\n%s", kind, usage)
}

// writeImage writes spec to out, dated SOURCE_DATE_EPOCH (0 when unset),
// staging its layers next to out.
func writeImage(spec imageSpec, out string) error {
	created, err := sourceDate()
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(filepath.Dir(out), ".layers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	if err := spec.write(out, scratch, created); err != nil {
		return err
	}
	fmt.Printf("%s: %s\n", out, spec.tag)
	return nil
}

// sourceDate is the one date every file and record of an image carries.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

var etcdVersionLine = regexp.MustCompile(`(?m)^etcd Version: (\d+\.\d+\.\d+)$`)

// etcdVersion asks the etcd binary its version (the binaries are built
// for this machine).
func etcdVersion(ctx context.Context, bin string) (string, error) {
	b, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	m := etcdVersionLine.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s --version: no version in %q", bin, b)
	}
	return string(m[1]), nil
}

func resolveCmd(lists string, roots []string) error {
	ix, err := loadIndex(lists)
	if err != nil {
		return err
	}
	pkgs, err := ix.resolve(roots)
	if err != nil {
		return err
	}
	for _, p := range pkgs {
		fmt.Printf("%s=%s\n", p.Name, p.Version)
	}
	return nil
}

func checkCmd(ctx context.Context, archives []string) error {
	for _, a := range archives {
		scratch, err := os.MkdirTemp("", "imagecheck-")
		if err != nil {
			return err
		}
		lines, err := checkArchive(ctx, a, scratch)
		os.RemoveAll(scratch)
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(lines, "\n"))
	}
	return nil
}
