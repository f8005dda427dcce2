package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
)

// File modes: PostgreSQL refuses a key that others can read.
const (
	modeDir  fs.FileMode = 0o700
	modeKey  fs.FileMode = 0o600
	modeCert fs.FileMode = 0o644
)

// Files writes a member's certificates from the Secrets to Dir, for
// PostgreSQL (ssl_cert_file, ssl_key_file, ssl_ca_file) and libpq
// (sslcert, sslkey, sslrootcert). One Sync at a time may write a Dir.
type Files struct {
	Client             kubernetes.Interface
	Namespace, Cluster string
	Dir                string
	// Uid, Gid own Dir (when Sync creates it) and the files: PostgreSQL
	// refuses a key it does not own. As with os.Chown, -1 leaves that id
	// as it is; both -1 chowns nothing (the zero value chowns to root).
	Uid, Gid int
}

// file is one file Sync writes.
type file struct {
	name string
	data []byte
	mode fs.FileMode
}

// Sync reads ServerTLSSecret and ClientTLSSecret and writes, in Dir,
// contract.TLSFileCA (the server Secret's ca.crt), TLSFileServerCert,
// TLSFileServerKey, TLSFileClientCert and TLSFileClientKey:
// keys 0600, certificates 0644, Dir 0700 (created when missing). It checks
// both Secrets before it writes anything: every PEM parses and each key
// goes with its certificate, else it fails naming the Secret and the key,
// and writes nothing. Each file is written only when its bytes (or mode,
// or owner) differ, to a temporary file in Dir renamed over the old one;
// changed reports whether any file changed, so the caller knows to have
// PostgreSQL reload. A missing Secret is an error that errors.Is reports
// as ErrNotIssued.
func (f *Files) Sync(ctx context.Context) (changed bool, err error) {
	server, err := f.read(ctx, contract.ServerTLSSecret(f.Cluster))
	if err != nil {
		return false, err
	}
	client, err := f.read(ctx, contract.ClientTLSSecret(f.Cluster))
	if err != nil {
		return false, err
	}
	if err := f.ensureDir(); err != nil {
		return false, err
	}
	// The CA first, so the bundle that verifies a new leaf is there first.
	files := []file{
		{contract.TLSFileCA, server[contract.TLSKeyCA], modeCert},
		{contract.TLSFileServerCert, server[contract.TLSKeyCert], modeCert},
		{contract.TLSFileServerKey, server[contract.TLSKeyKey], modeKey},
		{contract.TLSFileClientCert, client[contract.TLSKeyCert], modeCert},
		{contract.TLSFileClientKey, client[contract.TLSKeyKey], modeKey},
	}
	for _, fl := range files {
		wrote, err := f.write(fl)
		if err != nil {
			return changed, err
		}
		changed = changed || wrote
	}
	return changed, nil
}

// Material is Sync's client side without writing: the superuser's
// certificate from the client Secret, and the CA bundle from its ca.crt.
// For callers that connect to the cluster's servers but do not serve.
func (f *Files) Material(ctx context.Context) (Material, error) {
	data, err := f.read(ctx, contract.ClientTLSSecret(f.Cluster))
	if err != nil {
		return Material{}, err
	}
	return materialOf(data), nil
}

// read gets Secret name and checks its certificate, key and CA bundle.
func (f *Files) read(ctx context.Context, name string) (map[string][]byte, error) {
	ref := f.Namespace + "/" + name
	s, err := f.Client.CoreV1().Secrets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read secret %s: %w: %w", ref, ErrNotIssued, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read secret %s: %w", ref, err)
	}
	if err := checkLeaf(ref, s.Data); err != nil {
		return nil, err
	}
	return s.Data, nil
}

// ensureDir creates Dir (0700, chowned) when it is missing.
func (f *Files) ensureDir() error {
	st, err := os.Stat(f.Dir)
	if err == nil {
		if !st.IsDir() {
			return fmt.Errorf("certificate directory %s is not a directory", f.Dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("certificate directory: %w", err)
	}
	if err := os.MkdirAll(f.Dir, modeDir); err != nil {
		return fmt.Errorf("certificate directory: %w", err)
	}
	// MkdirAll's mode is masked by the umask.
	if err := os.Chmod(f.Dir, modeDir); err != nil {
		return fmt.Errorf("certificate directory: %w", err)
	}
	if err := f.chown(f.Dir); err != nil {
		return fmt.Errorf("certificate directory: %w", err)
	}
	return nil
}

// write replaces Dir/fl.name with fl unless it holds it already.
func (f *Files) write(fl file) (wrote bool, err error) {
	path := filepath.Join(f.Dir, fl.name)
	if f.current(path, fl) {
		return false, nil
	}
	tmp, err := os.CreateTemp(f.Dir, "."+fl.name+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(fl.mode); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.chown(tmp.Name()); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(fl.data); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

// current reports whether path is a regular file with fl's bytes, mode
// and (when Uid or Gid is set) owner.
func (f *Files) current(path string, fl file) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != fl.mode {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if f.Uid >= 0 && int(sys.Uid) != f.Uid || f.Gid >= 0 && int(sys.Gid) != f.Gid {
			return false
		}
	}
	data, err := os.ReadFile(path)
	return err == nil && bytes.Equal(data, fl.data)
}

func (f *Files) chown(path string) error {
	if f.Uid < 0 && f.Gid < 0 {
		return nil
	}
	return os.Chown(path, f.Uid, f.Gid)
}
