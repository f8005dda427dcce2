package gitrepo

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// redact hides the credentials of a remote's address for messages: what
// comes before the last '@' of its authority, where a URL or an
// scp-style address ("user:token@host:path") holds a user and password.
// The last '@' of the whole address is taken, so a password holding '@'
// or '/' never shows in part; an '@' in a path hides a little more than
// needed, never less.
func redact(u string) string {
	at := strings.LastIndex(u, "@")
	if at < 0 {
		return u
	}
	if j := strings.Index(u, "://"); j >= 0 {
		if j > at {
			return u
		}
		return u[:j+3] + "***" + u[at:]
	}
	return "***" + u[at:]
}

// secretOf is the user information of a remote's address (what redact
// hides); "" when there is none.
func secretOf(u string) string {
	at := strings.LastIndex(u, "@")
	if at < 0 {
		return ""
	}
	if j := strings.Index(u, "://"); j >= 0 {
		if j > at {
			return ""
		}
		return u[j+3 : at]
	}
	return u[:at]
}

// scrub hides the remote's credentials in an error of the git library,
// which may quote the address it was given; nil stays nil. The error's
// chain is kept for errors.Is and errors.As.
func scrub(err error, remote string) error {
	secret := secretOf(remote)
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &scrubbed{err: err, secret: secret}
}

type scrubbed struct {
	err    error
	secret string
}

func (s *scrubbed) Error() string { return strings.ReplaceAll(s.err.Error(), s.secret, "***") }
func (s *scrubbed) Unwrap() error { return s.err }

// ErrCleartextCredentials: credentials would be sent unencrypted.
var ErrCleartextCredentials = errors.New("credentials over an unencrypted connection")

// CheckTransport refuses to send credentials (a token, or a user and
// password in the address) over http:// to anything but this machine:
// a token read off the network is a token lost. withAuth says whether an
// authentication method goes with the address.
func CheckTransport(remote string, withAuth bool) error {
	u, err := url.Parse(remote)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return nil // not a URL (a path, an scp-style address), or not http
	}
	if !withAuth && u.User == nil {
		return nil
	}
	if IsLoopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%s: %w: refusing to send them to %s over http://; use https:// (or, on a network you trust, --insecure-http)", redact(remote), ErrCleartextCredentials, u.Hostname())
}

// IsLoopback says whether host (a name or an address, without a port)
// is this machine: localhost, or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
