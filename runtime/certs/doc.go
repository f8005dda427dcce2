// Package certs keeps a cluster's TLS certificates in the Secrets
// planner/contract names, and writes them out as files for PostgreSQL and
// libpq. What the leaves certify is the kind's, in a file of its own
// (postgres.go, etcd.go), picked by Keeper.App from kindLeaves (leaf.go);
// an app without leaves there is refused. An etcd cluster's are a peer
// certificate, which the members serve and present to each other, and
// root's client certificate; its pods read them from a projected Secret
// volume, not through Files.
//
// Two sides share the Secrets:
//   - Keeper (keeper.go, leaf.go) is the runtime leader's. On each pass
//     Ensure reads the cluster's CA from contract.CASecret (or makes one
//     with pki.NewCA when there is none), and issues the members' server
//     certificate (contract.ServerTLSSecret) and the superuser's client
//     certificate (contract.ClientTLSSecret) again whenever pki.Due says
//     so, or when their ca.crt is not pki.Bundle's. A CA past two thirds
//     of its lifetime is replaced in two moves, trusted before it signs
//     (rotate.go). A CA is adopted only with proof that this cluster's
//     runtime made it: the fingerprint of each of its CA certificates,
//     recorded before the CA is written in the status ConfigMap only
//     this cluster's runtime may write (proof.go); labels prove nothing.
//     The leaves' ca.crt trusts the cluster's proven CAs only: anything
//     else found there is dropped. It never replaces a CA Secret it cannot read, and never
//     writes a Secret it did not make (no contract.LabelManagedBy of
//     contract.ManagedByRuntime): either would cut members off, so a
//     person must look. Updates carry the
//     resourceVersion read, so two writers make a conflict, not a lost
//     update; a create that races another replica's is read back.
//   - Files (files.go) is the instance manager's. Sync reads the server
//     and client Secrets by name and writes the five contract.PostgresTLS*
//     files, each atomically (a temporary file renamed over the old one)
//     and only when it changed, after checking the whole set: a set with
//     a key that does not match its certificate is never written. Until
//     the runtime has issued the Secrets, Sync and Material fail with
//     ErrNotIssued, so callers can wait.
//
// Material (material.go) is what a client of the cluster's servers needs:
// the CA bundle and the superuser's certificate, and ClientConfig makes a
// crypto/tls configuration of them.
//
// API access is by name only: get, create and update of the three Secrets
// and of the status ConfigMap for the Keeper, get of the server and client Secrets for Files; never
// list or watch.
//
// Imports: client-go, runtime/pki (which makes and checks the PEM) and
// planner/contract (the Secrets' names, keys, labels and file names);
// never runtime/agent or runtime/instance, which import it.
package certs
