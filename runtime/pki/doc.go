// Package pki makes and checks the certificates of a PostgreSQL cluster's
// TLS: the cluster's own certificate authority, the members' server
// certificate and the superuser's client certificate.
//
// The runtime's agent keeps them in the Secrets planner/contract names
// (CASecret, ServerTLSSecret, ClientTLSSecret): on each pass it reads the
// CA back with ParseCA (or makes one with NewCA when there is none), asks
// Due of each leaf whether it must be issued again, issues it with
// IssueServer or IssueClient when it must, and writes Bundle's output as
// the CA certificates the members trust. Storing the bytes is the agent's
// work: this package only makes and checks PEM, and does no I/O besides
// reading crypto/rand.
//
// Keys are ECDSA P-256, written as PKCS#8 ("PRIVATE KEY"); serials are
// random 128-bit numbers. Every certificate is valid from an hour before
// it is made (for clocks a little behind) to CALifetime (ten years) or
// LeafLifetime (90 days) after, and a leaf never outlives the CA that
// signed it.
//
// Renewal rule: a leaf is due, and issued again with a new key, once it is
// past two thirds of its lifetime (day 60 of 90 for a fresh leaf), or
// whenever it is missing, unreadable, not yet or no longer valid, not
// signed by the cluster's CA, or not what it should be (names, common
// name, usage). Replacing the CA itself is a rarer move: while it goes on,
// Bundle keeps the replaced CA's certificate next to the new one, so peers
// still trust the leaves it signed until they are issued again.
//
// Imports: the standard library only.
package pki
