package backup

import (
	"context"
	"io"
	"testing"

	"github.com/cairn-dev/cairn/testbed/pgfake"
)

// A base backup's replication connection answers only SCRAM or no
// exchange: a server that asks for the replication role's password in
// cleartext or as MD5 gets nothing.
func TestBaseBackupSendsNoPasswordInClear(t *testing.T) {
	for _, ask := range []pgfake.Ask{pgfake.Cleartext, pgfake.MD5} {
		t.Run(ask.String(), func(t *testing.T) {
			im := pgfake.Serve(t, ask)
			host, port := im.Addr()
			src := PostgresSource{Member: "db-0", Host: host, Port: port, User: "replicator", Password: "s3cret"}
			if err := src.Stream(context.Background(), io.Discard, &Manifest{}); err == nil {
				t.Fatal("the impostor served a base backup")
			}
			if im.Startups() == 0 {
				t.Fatal("the backup never tried")
			}
			if got := im.Passwords(); len(got) != 0 {
				t.Fatalf("the backup sent %d password message(s) to a server that asked in %s", len(got), ask)
			}
		})
	}
}
