package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// quietSettings keep a statement out of the server's log, whatever the
// spec's logging parameters say (log_statement: all, a
// log_min_duration_statement of 0, an error): the session that sets a
// password sends them as it starts, before its statement is read. Each
// takes a superuser, which the instance manager's session is.
var quietSettings = map[string]string{
	"log_statement":              "none",
	"log_min_duration_statement": "-1",
	"log_min_error_statement":    "panic",
	"log_duration":               "off",
}

// execQuiet is exec in a session whose statements the server never logs:
// for the statements that hold a password's verifier.
func (p *Manager) execQuiet(ctx context.Context, hostport, sql string) error {
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return err
	}
	cfg, err := p.superuserConfig(host, port)
	if err != nil {
		return err
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for k, v := range quietSettings {
		cfg.RuntimeParams[k] = v
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
