package certs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/runtime/pki"
)

func (b *bed) files(t *testing.T, cluster string) *Files {
	return &Files{Client: b.c, Namespace: b.ns, Cluster: cluster, Dir: filepath.Join(t.TempDir(), "tls"),
		Uid: os.Getuid(), Gid: os.Getgid()}
}

func testSyncWrites(t *testing.T, b *bed) {
	clk := newClock()
	k := b.keeper(t, "files", clk)
	b.ensure(t, k)
	f := b.files(t, "files")
	for _, step := range []struct {
		name   string
		before func(t *testing.T)
		want   bool
	}{
		{"first", nil, true},
		{"again", nil, false},
		{"after a reissue", func(t *testing.T) {
			clk.advance(2 * time.Hour)
			if _, written := b.ensure(t, k); len(written) != 2 {
				t.Fatalf("ensure wrote %v", written)
			}
		}, true},
		{"again after the reissue", nil, false},
		{"a key removed", func(t *testing.T) { mustDo(t, os.Remove(filepath.Join(f.Dir, "server.key"))) }, true},
		{"a key others may read", func(t *testing.T) { mustDo(t, os.Chmod(filepath.Join(f.Dir, "client.key"), 0o644)) }, true},
		{"a certificate changed", func(t *testing.T) { mustDo(t, os.WriteFile(filepath.Join(f.Dir, "ca.crt"), []byte("x"), 0o644)) }, true},
		{"settled", nil, false},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before(t)
			}
			changed, err := f.Sync(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if changed != step.want {
				t.Errorf("changed %v, want %v", changed, step.want)
			}
			checkFiles(t, b, f)
		})
	}
}

// checkFiles checks that f.Dir holds the five files of f's Secrets, with
// their modes, and nothing else.
func checkFiles(t *testing.T, b *bed, f *Files) {
	t.Helper()
	server, client := b.secret(t, f.Cluster+"-server-tls"), b.secret(t, f.Cluster+"-superuser-tls")
	want := map[string]struct {
		data []byte
		mode fs.FileMode
	}{
		"ca.crt":     {server.Data["ca.crt"], 0o644},
		"server.crt": {server.Data["tls.crt"], 0o644},
		"server.key": {server.Data["tls.key"], 0o600},
		"client.crt": {client.Data["tls.crt"], 0o644},
		"client.key": {client.Data["tls.key"], 0o600},
	}
	if st, err := os.Stat(f.Dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory %s: %v, %v", f.Dir, st.Mode(), err)
	}
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("directory holds %d entries, want %d", len(entries), len(want))
	}
	for name, w := range want {
		p := filepath.Join(f.Dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.Equal(data, w.data) {
			t.Errorf("%s is not its Secret's", name)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != w.mode {
			t.Errorf("%s mode %v, want %v", name, st.Mode().Perm(), w.mode)
		}
	}
}

func testSyncChecksFirst(t *testing.T, b *bed) {
	other, err := pki.NewCA("other", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherLeaf, err := other.IssueServer([]string{"x"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cluster, secret, key string
		value                []byte
		want                 string
	}{
		{"skey", "skey-server-tls", "tls.key", otherLeaf.KeyPEM, "tls.key does not go with tls.crt"},
		{"scert", "scert-server-tls", "tls.crt", otherLeaf.CertPEM, "tls.key does not go with tls.crt"},
		{"sca", "sca-server-tls", "ca.crt", []byte("garbage"), "ca.crt: CA bundle"},
		{"ccert", "ccert-superuser-tls", "tls.crt", []byte("garbage"), "tls.crt: no PEM certificate"},
		{"ckey", "ckey-superuser-tls", "tls.key", []byte{}, "tls.key is missing or empty"},
	} {
		t.Run(tt.cluster, func(t *testing.T) {
			b.ensure(t, b.keeper(t, tt.cluster, newClock()))
			f := b.files(t, tt.cluster)
			if _, err := f.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, f.Dir)
			b.edit(t, tt.secret, func(s *corev1.Secret) { s.Data[tt.key] = tt.value })
			changed, err := f.Sync(context.Background())
			if err == nil || !strings.Contains(err.Error(), b.ns+"/"+tt.secret) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("sync: %v, want an error naming %s and %q", err, tt.secret, tt.want)
			}
			if changed {
				t.Error("sync reports a change")
			}
			if after := snapshot(t, f.Dir); after != before {
				t.Errorf("the files changed:\n%s\nwant:\n%s", after, before)
			}
		})
	}
}

// snapshot describes every entry of dir: name, mode, bytes.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(e.Name() + " " + info.Mode().String() + " " + info.ModTime().String() + "\n" + string(data) + "\n")
	}
	return out.String()
}

func testSyncBeforeEnsure(t *testing.T, b *bed) {
	for _, tt := range []struct {
		cluster string
		setup   func(t *testing.T)
	}{
		{"none", nil},
		{"half", func(t *testing.T) {
			b.ensure(t, b.keeper(t, "half", newClock()))
			mustDo(t, b.c.CoreV1().Secrets(b.ns).Delete(context.Background(), "half-superuser-tls", metav1.DeleteOptions{}))
		}},
	} {
		t.Run(tt.cluster, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup(t)
			}
			f := b.files(t, tt.cluster)
			if _, err := f.Sync(context.Background()); !errors.Is(err, ErrNotIssued) {
				t.Errorf("sync: %v, want ErrNotIssued", err)
			}
			if _, err := f.Material(context.Background()); !errors.Is(err, ErrNotIssued) {
				t.Errorf("material: %v, want ErrNotIssued", err)
			}
			if _, err := os.Stat(f.Dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("directory made before the certificates were there: %v", err)
			}
		})
	}
}

func testFilesMaterial(t *testing.T, b *bed) {
	want, _ := b.ensure(t, b.keeper(t, "mat", newClock()))
	got, err := b.files(t, "mat").Material(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sameMaterial(got, want) {
		t.Error("Files.Material is not Ensure's")
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
