package contract

import (
	"encoding/json"
	"fmt"
	"time"
)

// StopsConfigMap is <cluster>-cairn-stops: where a PostgreSQL member's
// instance manager records that its primary stopped cleanly, one key per
// member (PostgresCleanStop as JSON). The runtime creates it; the members
// may get and update it by name; it is never rendered.
func StopsConfigMap(cluster string) string { return cluster + "-cairn-stops" }

// PostgresCleanStop is a primary's clean stop as its instance manager
// records it: the server shut down (a fast shutdown: PostgreSQL's
// shutdown checkpoint waits until its WAL senders sent all WAL to the
// connected streaming replicas), and LSN is the shutdown checkpoint's
// location, after every commit the primary acknowledged. A replica that
// received WAL up to LSN holds every acknowledged commit.
type PostgresCleanStop struct {
	// LSN is the shutdown checkpoint's location, as pg_controldata
	// prints it (X/X).
	LSN string `json:"lsn"`
	// Timeline is the timeline the primary wrote on.
	Timeline int64 `json:"timeline"`
	// At is when the server had stopped.
	At time.Time `json:"at"`
}

// EncodeCleanStop is the value of a member's key in StopsConfigMap.
func EncodeCleanStop(s PostgresCleanStop) (string, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode clean stop: %w", err)
	}
	return string(data), nil
}

// DecodeCleanStop reads a member's key of StopsConfigMap; "" is no
// record (the member cleared it when it started).
func DecodeCleanStop(v string) (PostgresCleanStop, bool, error) {
	if v == "" {
		return PostgresCleanStop{}, false, nil
	}
	var s PostgresCleanStop
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return PostgresCleanStop{}, false, fmt.Errorf("decode clean stop %q: %w", v, err)
	}
	if s.LSN == "" || s.At.IsZero() {
		return PostgresCleanStop{}, false, fmt.Errorf("clean stop %q: lsn and at are required", v)
	}
	return s, true, nil
}

// RuntimeNodeReader names the ClusterRole and ClusterRoleBinding that let
// a PostgreSQL cluster's runtime get nodes (whether a member's node is
// cordoned, so a drain is a switchover). Nodes are cluster-scoped, so the
// name holds the namespace.
func RuntimeNodeReader(namespace, cluster string) string {
	return "cairn:" + namespace + ":" + Runtime(cluster) + ":nodes"
}
