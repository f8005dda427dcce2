package postgres

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/cairn-dev/cairn/runtime/instance"
)

// The PostgreSQL server, and the programs the instance manager runs (the
// clone's pg_basebackup among them), never hold the passwords or the
// backup store's keys in their environment.
func TestServersGetNoSecretsInTheirEnvironment(t *testing.T) {
	for _, k := range instance.SecretEnv() {
		t.Setenv(k, "secret-"+k)
	}
	t.Setenv("CAIRN_HARMLESS", "kept")
	b := newPGBed(t)
	s := b.start(b.member(0, "new", 0), StartPrimary)
	env, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	vars := bytes.Split(env, []byte{0})
	if !bytes.Contains(env, []byte("CAIRN_HARMLESS=kept")) {
		t.Fatalf("the server's environment is not the instance manager's: %q", vars)
	}
	for _, k := range instance.SecretEnv() {
		if bytes.Contains(env, []byte("secret-"+k)) {
			t.Errorf("the server holds %s", k)
		}
	}
	// A program that needs a password gets only the one it is given.
	var got []string
	for _, kv := range instance.ChildEnv("PGPASSWORD=one-call") {
		if bytes.Contains([]byte(kv), []byte("secret-")) || bytes.HasPrefix([]byte(kv), []byte("PGPASSWORD=")) {
			got = append(got, kv)
		}
	}
	if len(got) != 1 || got[0] != "PGPASSWORD=one-call" {
		t.Errorf("a program's secrets: %q, want only PGPASSWORD=one-call", got)
	}
}
