// Package pki makes and checks the certificates of a cluster's TLS: the
// cluster's own certificate authority, the members' server certificate
// (for etcd a peer certificate, IssuePeer: server and client
// authentication both, since members present it to each other) and the
// superuser's client certificate.
//
// runtime/certs keeps them in the Secrets planner/contract names
// (CASecret, ServerTLSSecret, ClientTLSSecret): on each check it reads the
// CA back with ParseCA (or makes one with NewCA when there is none), asks
// Due of each leaf whether it must be issued again, issues it with
// IssueServer or IssueClient when it must, and writes Bundle's output as
// the CA certificates the members trust. Storing the bytes is that
// package's work: this one only makes and checks PEM, and does no I/O
// besides reading crypto/rand.
//
// Keys are ECDSA P-256, written as PKCS#8 ("PRIVATE KEY"); serials are
// random 128-bit numbers. Every certificate is valid from an hour before
// it is made (for clocks a little behind; a tenth of its lifetime when
// that is shorter than ten hours, as in tests) to CALifetime (ten years) or
// LeafLifetime (90 days) after, and a leaf never outlives the CA that
// signed it.
//
// Renewal rule: a leaf is due, and issued again with a new key, once it is
// past two thirds of its lifetime (day 60 of 90 for a fresh leaf), or
// whenever it is missing, unreadable, not yet or no longer valid, not
// signed by the cluster's CA, or not what it should be (names, common
// name, usage). Bundle keeps a replaced CA's certificate next to the new
// one while it is valid, so peers would still trust the leaves it signed
// until they are issued again; nothing replaces a CA yet (security.md).
//
// Imports: the standard library only.
package pki
