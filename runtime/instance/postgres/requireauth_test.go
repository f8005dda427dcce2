package postgres

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed/pgfake"
)

// The instance manager reaches its peers as the superuser: a pod at a
// peer's address that asks for the password in cleartext or as MD5 gets
// nothing, before TLS and under accept without certificates yet (where
// the connection is as before TLS).
func TestInstanceManagerSendsNoPasswordInClear(t *testing.T) {
	for _, mode := range []string{contract.TLSOff, contract.TLSAccept} {
		for _, ask := range []pgfake.Ask{pgfake.Cleartext, pgfake.MD5} {
			t.Run(mode+"/"+ask.String(), func(t *testing.T) {
				im := pgfake.Serve(t, ask)
				p := &Manager{SuperuserPassword: "s3cret", TLSDir: filepath.Join(t.TempDir(), "none")}
				p.Config.TLS = mode
				if c, err := p.connect(context.Background(), im.HostPort()); err == nil {
					c.Close(context.Background())
					t.Fatal("the impostor let the instance manager in")
				}
				if im.Startups() == 0 {
					t.Fatal("the instance manager never tried")
				}
				if got := im.Passwords(); len(got) != 0 {
					t.Fatalf("the instance manager sent %d password message(s) to a server that asked in %s", len(got), ask)
				}
			})
		}
	}
}
