// Package agentbed is what the tests of runtime/agent and of its kinds'
// packages share: pods owned by a StatefulSet as the controller would
// make them, a one-member etcd bed for backups, and the harnesses every
// kind's runtime passes (metrics of a standby and a leader, a read-only
// root).
//
// Imports: runtime/agent, testbed, client-go; never a kind's package
// (each kind's tests bring their own case). Only tests import it.
package agentbed
