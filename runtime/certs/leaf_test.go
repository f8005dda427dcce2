package certs

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// A kind the Keeper has no leaves for is refused, naming it, before any
// Secret is read or written; it is never given another kind's leaves.
func TestEnsureRefusesAnUnknownApp(t *testing.T) {
	client := fake.NewClientset()
	k := &Keeper{Client: client, Namespace: "db", Cluster: "v", App: "valkey"}
	_, _, err := k.Ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"valkey"`) {
		t.Fatalf("Ensure = %v, want an error naming app \"valkey\"", err)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("Ensure made %d API calls for an unknown app, want none", n)
	}
}
