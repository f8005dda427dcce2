package etcd

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/runtime/pki"
)

func TestEtcdReadCABundle(t *testing.T) {
	now := time.Now()
	ca1, err := pki.NewCA("CA 1", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := pki.NewCA("CA 2", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	both := pki.Bundle(ca1, ca2.CertPEM, now)
	leaves1, leaves2 := tlsFiles(t, ca1, nil), tlsFiles(t, ca2, nil)
	read := func(t *testing.T, bundle []byte, leaves map[string][]byte) caBundle {
		dir := t.TempDir()
		files := map[string][]byte{}
		for k, v := range leaves {
			files[k] = v
		}
		files[contract.TLSFileCA] = bundle
		if bundle == nil {
			delete(files, contract.TLSFileCA)
		}
		project(t, dir, files)
		return readCABundle(dir)
	}
	base := read(t, both, leaves1)
	if base.err != nil || base.sum == ([sha256.Size]byte{}) {
		t.Fatalf("the bundle of both CAs: %v", base.err)
	}
	for _, tc := range []struct {
		name   string
		bundle []byte
		leaves map[string][]byte
		same   bool   // the same set as base
		err    string // what the error says; empty for none
	}{
		{name: "reordered, as the second move does", bundle: pki.Bundle(ca2, ca1.CertPEM, now), leaves: leaves2, same: true},
		{name: "a certificate twice", bundle: append(append([]byte(nil), both...), ca2.CertPEM...), leaves: leaves1, same: true},
		{name: "one CA fewer", bundle: ca1.CertPEM, leaves: leaves1},
		{name: "not PEM", bundle: []byte("garbage"), leaves: leaves1, err: "not PEM"},
		{name: "empty", bundle: []byte{}, leaves: leaves1, err: "no certificate"},
		{name: "cut short", bundle: both[:len(both)-40], leaves: leaves1, err: "not PEM"},
		{name: "a key in the bundle", bundle: append(append([]byte(nil), both...), leaves1[contract.TLSFileServerKey]...), leaves: leaves1, err: "not \"CERTIFICATE\""},
		{name: "does not trust this member's own leaves", bundle: ca2.CertPEM, leaves: leaves1, err: "does not trust this member's certificate"},
		{name: "missing", bundle: nil, leaves: leaves1, err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := read(t, tc.bundle, tc.leaves)
			switch {
			case tc.err == "" && got.err != nil:
				t.Fatalf("unexpected error: %v", got.err)
			case tc.err != "" && (got.err == nil || !strings.Contains(got.err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", got.err, tc.err)
			case tc.err == "" && (got.sum == base.sum) != tc.same:
				t.Fatalf("same set as the bundle of both CAs: %v, want %v", got.sum == base.sum, tc.same)
			}
		})
	}
}

func TestEtcdProcExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		stop   bool
		code   int // 0: exitErr returns nil
	}{
		{name: "exits 0", script: "exit 0"},
		{name: "exits 3", script: "exit 3", code: 3},
		{name: "stopped: dies of the SIGTERM it was sent", script: "exec sleep 60", stop: true},
		{name: "stopped: handles it and exits 0", script: "trap 'exit 0' TERM; sleep 60 & wait", stop: true},
		{name: "stopped: handles it and fails", script: "trap 'exit 2' TERM; sleep 60 & wait", stop: true, code: 2},
		{name: "killed by a signal of someone else's", script: "kill -TERM $$", code: 143},
		{name: "stopped, does not end: killed", script: "trap '' TERM; while :; do sleep 0.1; done", stop: true, code: 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := startEtcd("/bin/sh", []string{"-c", tc.script}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.stop {
				time.Sleep(200 * time.Millisecond) // the shell sets its trap
				p.stop(time.Second)
			}
			err = p.exitErr()
			var ee *ExitError
			switch {
			case tc.code == 0 && err != nil:
				t.Fatalf("exitErr = %v, want nil", err)
			case tc.code != 0 && (!errors.As(err, &ee) || ee.Code != tc.code):
				t.Fatalf("exitErr = %v, want status %d", err, tc.code)
			}
		})
	}
}

// TestEtcdRestartRereadsItsConfig: a restart onto a new bundle reads the
// mounted config again, as a new container would (a scale-in merged
// since the start names this member), and keeps the one it has when the
// config does not read.
func TestEtcdRestartRereadsItsConfig(t *testing.T) {
	dir := t.TempDir()
	e := &Manager{Name: "e-2", ConfigDir: dir, Config: Config{Config: instance.Config{Bootstrap: contract.BootstrapNew, TLS: contract.TLSRequire}}, Log: instancetest.Logger(t)}
	write := func(key, v string) {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(contract.KeyTLS, contract.TLSRequire)
	write(contract.KeyRequestRemoveMember, "e-2")
	e.rereadConfig()
	if e.Config.RemoveMember != "e-2" || e.Config.Bootstrap != contract.BootstrapExisting {
		t.Fatalf("config after a restart: %+v", e.Config)
	}
	write(contract.KeyBootstrap, "sideways")
	e.rereadConfig()
	if e.Config.RemoveMember != "e-2" || e.Config.Bootstrap != contract.BootstrapExisting {
		t.Fatalf("an unreadable config replaced the one read before: %+v", e.Config)
	}
}
