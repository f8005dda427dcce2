package certs

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// A kind the Keeper has no leaves for is refused, naming it, before any
// Secret is read or written; it is never given another kind's leaves.
func TestEnsureRefusesAnUnknownApp(t *testing.T) {
	for _, app := range []string{"valkey", ""} {
		client := fake.NewClientset()
		k := &Keeper{Client: client, Namespace: "db", Cluster: "v", App: app}
		_, _, err := k.Ensure(context.Background())
		if want := fmt.Sprintf("%q", app); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Ensure = %v, want an error naming app %s", err, want)
		}
		if n := len(client.Actions()); n != 0 {
			t.Errorf("app %q: Ensure made %d API calls, want none", app, n)
		}
	}
}
