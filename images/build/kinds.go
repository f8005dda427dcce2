package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/sandbox"
)

// pauseImage is the test node's pod sandbox: the static pause binary
// alone, run as nobody.
func pauseImage(bin string) (imageSpec, error) {
	t := newTree()
	if err := t.addPath(bin, "pause"); err != nil {
		return imageSpec{}, err
	}
	t.entries["pause"].mode = 0o755
	return imageSpec{
		tag:    sandbox.Image,
		layers: []*tree{t},
		config: v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"},
	}, nil
}

// The users of the images: the postgres user of the official postgres
// images, and distroless's nonroot, which the renderer runs cairn's
// runtime and etcd as.
const (
	postgresUID = 999
	nonrootUID  = 65532
	basePath    = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	pgDataDir   = "var/lib/postgresql/data"
	pgSocketDir = "var/run/postgresql"
	caBundle    = "etc/ssl/certs/ca-certificates.crt"
)

// skipDebianDocs leaves out of an unpacked Debian root what no program in
// an image reads: documentation, manual pages, message translations (the
// images run with LANG=C.UTF-8, and cairn reads PostgreSQL's messages in
// English), and the list of unpacked packages.
func skipDebianDocs(rel string) bool {
	switch rel {
	case ".debs", "usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/lintian",
		"usr/share/bug", "usr/share/locale", "usr/share/bash-completion", "usr/share/gdb":
		return true
	}
	return false
}

// baseFiles are the files every image has: users and groups, the name
// service switch, hosts, a world-writable /tmp.
func baseFiles(t *tree, users ...user) {
	passwd := "root:x:0:0:root:/root:/bin/sh\n"
	group := "root:x:0:\n"
	for _, u := range users {
		passwd += fmt.Sprintf("%s:x:%d:%d:%s:/%s:%s\n", u.name, u.uid, u.uid, u.name, u.home, u.shell)
		group += fmt.Sprintf("%s:x:%d:\n", u.name, u.uid)
		t.dir(u.home, 0o755, u.uid, u.uid)
	}
	passwd += "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group += "nogroup:x:65534:\n"
	t.file("etc/passwd", 0o644, []byte(passwd))
	t.file("etc/group", 0o644, []byte(group))
	t.file("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nservices: files\nprotocols: files\n"))
	// The kubelet and Docker mount their own over it; it is there for
	// a container started without one (ctr run).
	t.file("etc/hosts", 0o644, []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"))
	t.dir("tmp", 0o1777, 0, 0)
	t.dir("root", 0o700, 0, 0)
}

type user struct {
	name, home, shell string
	uid               int
}

// addCABundle writes Debian's ca-certificates (unpacked in root) as the
// one bundle update-ca-certificates would make, which Go and OpenSSL read.
func addCABundle(t *tree, root string) error {
	certs, err := filepath.Glob(filepath.Join(root, "usr/share/ca-certificates/mozilla/*.crt"))
	if err != nil || len(certs) == 0 {
		return fmt.Errorf("no certificates under %s/usr/share/ca-certificates (is ca-certificates unpacked?)", root)
	}
	sort.Strings(certs)
	var bundle []byte
	for _, c := range certs {
		b, err := os.ReadFile(c)
		if err != nil {
			return fmt.Errorf("ca bundle: %w", err)
		}
		bundle = append(bundle, b...)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			bundle = append(bundle, '\n')
		}
	}
	t.file(caBundle, 0o644, bundle)
	return nil
}

// cairnImage is the static cairn binary at /cairn, run as nonroot: the
// runtime Deployment's command, and the install-cairn init container's,
// which copies it into each database pod's cairn-bin volume.
func cairnImage(bin, base string) (imageSpec, error) {
	t := newTree()
	if err := t.addPath(bin, "cairn"); err != nil {
		return imageSpec{}, err
	}
	t.entries["cairn"].mode = 0o755
	baseFiles(t, user{name: "nonroot", home: "home/nonroot", shell: "/sbin/nologin", uid: nonrootUID})
	if err := addCABundle(t, base); err != nil {
		return imageSpec{}, err
	}
	return imageSpec{
		tag:    renderer.DefaultOptions.CairnImage,
		layers: []*tree{t},
		config: v1.Config{
			Entrypoint: []string{"/cairn"},
			User:       fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
			Env:        []string{"PATH=" + basePath},
		},
	}, nil
}

// etcdImage is an etcd binary at /usr/local/bin/etcd, as the official
// images have it (the instance manager finds it on PATH), with the C
// library the binaries built here link against.
func etcdImage(bin, base, version string) (imageSpec, error) {
	tag, err := renderer.DefaultOptions.EtcdImage(version)
	if err != nil {
		return imageSpec{}, fmt.Errorf("etcd %s: %w", version, err)
	}
	t := newTree()
	if err := t.addDir(base, "", skipDebianDocs); err != nil {
		return imageSpec{}, err
	}
	if err := t.addPath(bin, "usr/local/bin/etcd"); err != nil {
		return imageSpec{}, err
	}
	t.entries["usr/local/bin/etcd"].mode = 0o755
	baseFiles(t, user{name: "nonroot", home: "home/nonroot", shell: "/sbin/nologin", uid: nonrootUID})
	if err := addCABundle(t, base); err != nil {
		return imageSpec{}, err
	}
	t.dir("var/etcd", 0o755, 0, 0)
	t.dir("var/lib/etcd", 0o755, 0, 0)
	return imageSpec{
		tag:    tag,
		layers: []*tree{t},
		config: v1.Config{
			Cmd:          []string{"/usr/local/bin/etcd"},
			Env:          []string{"PATH=" + basePath},
			WorkingDir:   "/var/lib/etcd",
			ExposedPorts: map[string]struct{}{"2379/tcp": {}, "2380/tcp": {}},
		},
	}, nil
}

// pgRelease is one PostgreSQL major unpacked from Debian: its major, the
// Debian version of its server package and the upstream release.
type pgRelease struct {
	major          int
	debian, number string
}

// readRelease finds the one PostgreSQL major in root and its version in
// root/.debs (fetch-debs's list of what it unpacked).
func readRelease(root string) (pgRelease, error) {
	bins, _ := filepath.Glob(filepath.Join(root, "usr/lib/postgresql/*/bin/postgres"))
	if len(bins) != 1 {
		return pgRelease{}, fmt.Errorf("%s: want one usr/lib/postgresql/<major>/bin/postgres, found %d", root, len(bins))
	}
	major, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(bins[0]))))
	if err != nil {
		return pgRelease{}, fmt.Errorf("%s: major: %w", bins[0], err)
	}
	f, err := os.Open(filepath.Join(root, ".debs"))
	if err != nil {
		return pgRelease{}, fmt.Errorf("package list: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, ver, _ := strings.Cut(sc.Text(), "=")
		if name == fmt.Sprintf("postgresql-%d", major) {
			_, up, _ := splitVersion(ver)
			number, _, _ := strings.Cut(up, "+")
			return pgRelease{major: major, debian: ver, number: number}, nil
		}
	}
	return pgRelease{}, fmt.Errorf("%s/.debs: no postgresql-%d", root, major)
}

// busyboxCommands are the busybox applets the PostgreSQL images link:
// cp, which pg_upgrade runs (`cp -Rf` of pg_xact), and what helps a
// person looking around with `kubectl exec`.
var busyboxCommands = []string{"cat", "cp", "ls", "ln", "mkdir", "mv", "ps", "rm"}

// postgresTree is a PostgreSQL root laid out as the official image: the
// programs under /usr/lib/postgresql/<major>/bin, the postgres user and
// group 999, PGDATA and the socket directory writable by it; and the CA
// bundle, for cairn's instance manager, which runs in this image and
// reaches object storage over TLS.
func postgresTree(root string) (*tree, error) {
	t := newTree()
	if err := t.addDir(root, "", skipDebianDocs); err != nil {
		return nil, err
	}
	baseFiles(t, user{name: "postgres", home: "var/lib/postgresql", shell: "/bin/sh", uid: postgresUID})
	t.dir(pgDataDir, 0o777, postgresUID, postgresUID)
	t.dir(pgSocketDir, 0o3777, postgresUID, postgresUID)
	t.symlink("etc/localtime", "/usr/share/zoneinfo/Etc/UTC")
	if err := addCABundle(t, root); err != nil {
		return nil, err
	}
	if !t.has("bin/sh") {
		t.symlink("bin/sh", "dash")
	}
	if t.has("bin/busybox") {
		for _, a := range busyboxCommands {
			if !t.has("bin/" + a) {
				t.symlink("bin/"+a, "busybox")
			}
		}
	}
	return t, nil
}

// postgresConfig is the official image's config, with C.UTF-8 (which
// Debian's libc-bin carries compiled) for its en_US.utf8, and USER 999.
func postgresConfig(r pgRelease) v1.Config {
	return v1.Config{
		Cmd:  []string{"postgres"},
		User: fmt.Sprintf("%d:%d", postgresUID, postgresUID),
		Env: []string{
			fmt.Sprintf("PATH=%s:/usr/lib/postgresql/%d/bin", basePath, r.major),
			"LANG=C.UTF-8",
			fmt.Sprintf("PG_MAJOR=%d", r.major),
			"PG_VERSION=" + r.debian,
			"PGDATA=/" + pgDataDir,
		},
		StopSignal:   "SIGINT",
		Volumes:      map[string]struct{}{"/" + pgDataDir: {}},
		ExposedPorts: map[string]struct{}{"5432/tcp": {}},
	}
}

// postgresImage is one PostgreSQL major, tagged with its release as the
// renderer names the image of that version.
func postgresImage(root string) (imageSpec, error) {
	r, err := readRelease(root)
	if err != nil {
		return imageSpec{}, err
	}
	tag, err := renderer.DefaultOptions.PostgresImage(r.number)
	if err != nil {
		return imageSpec{}, fmt.Errorf("postgres %s: %w", r.number, err)
	}
	t, err := postgresTree(root)
	if err != nil {
		return imageSpec{}, err
	}
	return imageSpec{tag: tag, layers: []*tree{t}, config: postgresConfig(r)}, nil
}

// upgradeImage is the pg_upgrade image: the image of the newer major, and
// a layer with the older major's programs beside it and the libraries
// they need that the newer one's root lacks (found by soname, as the
// loader looks them up).
func upgradeImage(fromRoot, toRoot string) (imageSpec, error) {
	from, err := readRelease(fromRoot)
	if err != nil {
		return imageSpec{}, err
	}
	to, err := readRelease(toRoot)
	if err != nil {
		return imageSpec{}, err
	}
	if from.major >= to.major {
		return imageSpec{}, fmt.Errorf("pg_upgrade from %d to %d: the old major must be older", from.major, to.major)
	}
	base, err := postgresTree(toRoot)
	if err != nil {
		return imageSpec{}, err
	}
	old, err := oldMajorTree(fromRoot, toRoot, from.major)
	if err != nil {
		return imageSpec{}, err
	}
	for name, e := range old.entries {
		if e.mode.IsDir() && base.has(name) {
			delete(old.entries, name) // the newer layer's directory stands
		}
	}
	return imageSpec{
		tag:    renderer.DefaultOptions.PostgresUpgradeImage(from.major, to.major),
		layers: []*tree{base, old},
		config: postgresConfig(to),
	}, nil
}

// oldMajorTree holds the older major's programs, shared files and the
// libraries they need that toRoot cannot load. JIT (llvmjit and its
// bitcode, with LLVM) stays out: pg_upgrade only starts the old server to
// read its catalogs, and PostgreSQL runs without JIT when llvmjit is
// absent.
func oldMajorTree(fromRoot, toRoot string, major int) (*tree, error) {
	lib := fmt.Sprintf("usr/lib/postgresql/%d", major)
	share := fmt.Sprintf("usr/share/postgresql/%d", major)
	old := newTree()
	noJIT := func(rel string) bool { return strings.HasPrefix(rel, "lib/llvmjit") || rel == "lib/bitcode" }
	if err := old.addDir(filepath.Join(fromRoot, lib), lib, noJIT); err != nil {
		return nil, err
	}
	if err := old.addDir(filepath.Join(fromRoot, share), share, nil); err != nil {
		return nil, err
	}
	var files []string
	for name, e := range old.entries {
		if e.src != "" {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	libs, err := libsFor(fromRoot, toRoot, files)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		if err := old.addPath(filepath.Join(fromRoot, l), l); err != nil {
			return nil, err
		}
	}
	return old, nil
}
