package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The connections a member makes to itself and to the other members, as
// the superuser.

// findPrimary returns the first of addrs that accepts connections and is
// not in recovery, or "".
func (p *Manager) findPrimary(ctx context.Context, addrs []string) string {
	self := p.Host + ":" + strconv.Itoa(p.Port)
	for _, c := range addrs {
		if c == self {
			continue
		}
		inRecovery, err := p.query(ctx, c, "SELECT pg_is_in_recovery()")
		if err == nil && !inRecovery {
			return c
		}
		p.Log.Debug("no primary at candidate", "candidate", c, "err", err)
	}
	return ""
}

func (p *Manager) query(ctx context.Context, hostport, sql string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := p.connect(cctx, hostport)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var v bool
	err = conn.QueryRow(cctx, sql).Scan(&v)
	return v, err
}

// exec runs a statement on a member as the superuser.
func (p *Manager) exec(ctx context.Context, hostport, sql string) error {
	conn, err := p.connect(ctx, hostport)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Ping connects to this member's own server as the instance manager
// does, over TLS while it is on, and runs a query: a readiness check.
func (p *Manager) Ping(ctx context.Context) error {
	_, err := p.query(ctx, p.Host+":"+strconv.Itoa(p.Port), "SELECT true")
	return err
}

func (p *Manager) connect(ctx context.Context, hostport string) (*pgx.Conn, error) {
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	cfg, err := p.superuserConfig(host, port)
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func splitHostPort(hp string) (string, int, error) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("address %q has no port", hp)
	}
	port, err := strconv.Atoi(hp[i+1:])
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", hp, err)
	}
	return hp[:i], port, nil
}
