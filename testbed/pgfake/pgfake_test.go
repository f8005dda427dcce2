package pgfake_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-dev/cairn/testbed/pgfake"
)

// The impostor works: a client that does not restrict the methods it
// answers sends it the password, in cleartext or hashed with its salt;
// one with require_auth=scram-sha-256,none sends nothing.
func TestImpostorGetsWhatAnUnrestrictedClientSends(t *testing.T) {
	for _, ask := range []pgfake.Ask{pgfake.Cleartext, pgfake.MD5} {
		t.Run(ask.String(), func(t *testing.T) {
			s := pgfake.Serve(t, ask)
			connect := func(requireAuth string) error {
				cfg, err := pgconn.ParseConfig("sslmode=prefer")
				if err != nil {
					t.Fatal(err)
				}
				host, port := s.Addr()
				cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.RequireAuth = host, uint16(port), "postgres", "s3cret", requireAuth
				cfg.ConnectTimeout = 5 * time.Second
				c, err := pgconn.ConnectConfig(context.Background(), cfg)
				if err == nil {
					c.Close(context.Background())
				}
				return err
			}
			if err := connect(""); err == nil {
				t.Fatal("the impostor let the client in")
			}
			got := s.Passwords()
			if len(got) != 1 || (ask == pgfake.Cleartext && got[0] != "s3cret") || (ask == pgfake.MD5 && !strings.HasPrefix(got[0], "md5")) {
				t.Fatalf("an unrestricted client sent %q", got)
			}
			if err := connect("scram-sha-256,none"); err == nil || !strings.Contains(err.Error(), "require_auth") {
				t.Fatalf("a restricted client: %v", err)
			}
			if got := s.Passwords(); len(got) != 1 || s.Startups() != 2 {
				t.Fatalf("a restricted client sent %q (%d startups)", got, s.Startups())
			}
		})
	}
}
