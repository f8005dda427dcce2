package pgfake

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Ask is the authentication an impostor asks a client for.
type Ask int

const (
	// Cleartext asks for the password as it is
	// (AuthenticationCleartextPassword).
	Cleartext Ask = iota
	// MD5 asks for the password's MD5 hash with a salt the impostor
	// chose (AuthenticationMD5Password), which it may then guess offline.
	MD5
)

func (a Ask) String() string {
	if a == MD5 {
		return "MD5"
	}
	return "cleartext"
}

// Server is an impostor listening on loopback until the test ends.
type Server struct {
	ln  net.Listener
	ask Ask

	mu        sync.Mutex
	passwords []string
	startups  int
}

// Serve starts an impostor on a free loopback port that asks every
// client as ask says.
func Serve(t testing.TB, ask Ask) *Server {
	t.Helper()
	return ServeAt(t, "127.0.0.1:0", ask)
}

// ServeAt starts an impostor at addr (a member's address, where the
// member is not listening).
func ServeAt(t testing.TB, addr string, ask Ask) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, ask: ask}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

// Addr is where the impostor listens.
func (s *Server) Addr() (host string, port int) {
	a := s.ln.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}

// HostPort is Addr as host:port.
func (s *Server) HostPort() string {
	host, port := s.Addr()
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Passwords are the password messages clients sent, in order.
func (s *Server) Passwords() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.passwords...)
}

// Startups counts the connections that reached the startup message: a
// client that sent nothing never tried.
func (s *Server) Startups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startups
}

// startup reads up to the client's startup message, declining each
// request for TLS or GSS encryption on the way; false when the client
// hung up or sent something else.
func startup(b *pgproto3.Backend, c net.Conn) bool {
	for {
		msg, err := b.ReceiveStartupMessage()
		if err != nil {
			return false
		}
		switch msg.(type) {
		case *pgproto3.StartupMessage:
			return true
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			if _, err := c.Write([]byte{'N'}); err != nil {
				return false
			}
		default:
			return false
		}
	}
}

// serve declines TLS (and GSS encryption), asks for the password and
// records what comes back, then refuses the client.
func (s *Server) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b := pgproto3.NewBackend(c, c)
	if !startup(b, c) {
		return
	}
	s.mu.Lock()
	s.startups++
	s.mu.Unlock()
	switch s.ask {
	case MD5:
		b.Send(&pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}})
		_ = b.SetAuthType(pgproto3.AuthTypeMD5Password)
	default:
		b.Send(&pgproto3.AuthenticationCleartextPassword{})
		_ = b.SetAuthType(pgproto3.AuthTypeCleartextPassword)
	}
	if err := b.Flush(); err != nil {
		return
	}
	msg, err := b.Receive()
	if err != nil {
		return // the client hung up without answering
	}
	if p, ok := msg.(*pgproto3.PasswordMessage); ok {
		s.mu.Lock()
		s.passwords = append(s.passwords, p.Password)
		s.mu.Unlock()
	}
	b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: "password authentication failed"})
	_ = b.Flush()
}
