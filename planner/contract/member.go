package contract

import (
	"fmt"
	"strconv"
	"strings"
)

// MemberName is the name of a cluster's member (and of its pod) with the
// given StatefulSet ordinal: <cluster>-<ordinal>.
func MemberName(cluster string, ordinal int) string {
	return cluster + "-" + strconv.Itoa(ordinal)
}

// MemberOrdinal is the ordinal of a member of cluster from its name; ok is
// false unless name is exactly MemberName(cluster, n) for some n >= 0.
func MemberOrdinal(cluster, name string) (n int, ok bool) {
	rest, found := strings.CutPrefix(name, cluster+"-")
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || MemberName(cluster, n) != name {
		return 0, false
	}
	return n, true
}

// PodOrdinal is the ordinal a StatefulSet pod's name ends in, whatever the
// cluster's name.
func PodOrdinal(name string) (int, error) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return 0, fmt.Errorf("pod name %q does not end in -<ordinal>", name)
	}
	n, ok := MemberOrdinal(name[:i], name)
	if !ok {
		return 0, fmt.Errorf("pod name %q does not end in -<ordinal>", name)
	}
	return n, nil
}

// DataClaim is the volume claim of a member's data: <volume>-<member>, as
// the StatefulSet controller names it.
func DataClaim(member string) string { return DataVolume + "-" + member }

// DataVolume is the name of the members' volume claim template.
const DataVolume = "data"

// MemberCluster is the cluster of a member from its name, what comes
// before its "-<ordinal>"; ok is false unless name is
// MemberName(cluster, n) for some n >= 0.
func MemberCluster(name string) (cluster string, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", false
	}
	if _, ok := MemberOrdinal(name[:i], name); !ok {
		return "", false
	}
	return name[:i], true
}

// MaxMembers bounds the ordinals of any cluster's members (the planner's
// size limits of every kind are at most this). The rendered Roles name
// the member pods and claims 0..MaxMembers-1, so a Role reaches no other
// pod of the namespace.
const MaxMembers = 16

// MemberNames are the names of every member a cluster may have.
func MemberNames(cluster string) []string {
	out := make([]string, MaxMembers)
	for i := range out {
		out[i] = MemberName(cluster, i)
	}
	return out
}
