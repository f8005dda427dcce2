package postgres

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/testbed"
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

// The statement that sets the replication user's password never reaches
// the server's log, though a spec asks the server to log every statement,
// every duration and every error's statement.
func TestPasswordsNeverReachTheServerLog(t *testing.T) {
	b := newPGBed(t)
	m := b.member(0, "new", 0)
	for k, v := range map[string]string{"log_statement": "all", "log_min_duration_statement": "0", "log_min_error_statement": "debug5"} {
		m.Settings[k] = v
	}
	ctx := context.Background()
	_, initialised, err := m.Prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var log testbed.SyncBuffer
	s, err := m.Start(ctx, initialised, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Kill() })
	// The server logs statements: a query of the test's own shows.
	conn := b.conn(0)
	if _, err := conn.Exec(ctx, "SELECT 'logged-statement'"); err != nil {
		t.Fatal(err)
	}
	logged := func(s string) func() error {
		return func() error {
			if !strings.Contains(log.String(), s) {
				return fmt.Errorf("not logged yet")
			}
			return nil
		}
	}
	testbed.Eventually(t, "the server to log a statement", logged("logged-statement"))
	if err := m.ensureReplicationUser(ctx, b.addr(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 'after-the-password'"); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, "the statement after the password's to be logged", logged("after-the-password"))
	for _, secret := range []string{"SCRAM-SHA-256$", testReplPW, "PASSWORD"} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the server's log holds %q", secret)
		}
	}
}
