// Package pgfake is a pod posing as a PostgreSQL member, for tests of
// what cairn's clients send to a server they cannot trust yet: it answers
// every connection (declining TLS) with the authentication request it is
// told to make, a password in cleartext or as MD5, and records every
// password message a client sends before it hangs up.
package pgfake
