package testbed

import (
	"fmt"
	"strings"
)

// EtcdSpec is the spec of etcd cluster e of size members at version;
// extra is added to its spec mapping (", backup: {...}").
func EtcdSpec(size int, version, extra string) string {
	return fmt.Sprintf("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: %d, version: %q%s}\n", size, version, extra)
}

// EtcdLive is the live state of etcd cluster e: n members at version, e-0
// leading; the highest removed from the membership when removedTop; extra
// lines for the cluster (each "  key: value\n"). The rendered config sets
// the default compaction (EtcdLiveCompaction), the NetworkPolicy and
// required TLS, as a cluster cairn created has them.
func EtcdLive(n int, version string, removedTop bool, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: e\n  storage: 8Gi\n  network: restricted\n  tls: require\n  %s\n%s  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: %d, version: %q}\n  members:\n", EtcdLiveCompaction, extra, n, version)
	for i := range n {
		role, ready := "follower", true
		if i == 0 {
			role = "leader"
		}
		if removedTop && i == n-1 {
			role, ready = "removed", false
		}
		fmt.Fprintf(&b, "  - {name: e-%d, version: %q, ready: %v, role: %s, tls: %v, peerTLS: %v}\n", i, version, ready, role, ready, ready)
	}
	return b.String()
}

// EtcdLiveCompaction is the default compaction policy in a live state,
// as the rendered config of a cluster created with it sets it and the
// runtime reports running it.
const EtcdLiveCompaction = "compaction: {mode: periodic, retention: 1h, applied: true}"

// NoLive is a live state in which nothing runs.
const NoLive = "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters: []\n"
