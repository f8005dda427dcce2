package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/testbed"
)

// status reads each PostgreSQL replica's lag class from its runtime's
// status ConfigMap on a real API server, shows it in a LAG column, and
// says nothing of a cluster whose runtime reported none.
func TestStatusShowsReplicaLag(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	ns := cp.Namespace(t, "db")
	c := cp.Client(t)
	ctx := context.Background()
	doc := `{"primary":"shop-0","members":[{"name":"shop-0","role":"primary","answer":"primary"},` +
		`{"name":"shop-1","role":"replica","answer":"streaming replica","lag":"under 16 MiB"},` +
		`{"name":"shop-2","role":"replica","answer":"replica, not streaming","lag":"1 GiB or more"}]}`
	for name, data := range map[string]string{contract.StatusConfigMap("shop"): doc, contract.StatusConfigMap("broken"): "{"} {
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{contract.StatusKeyPostgres: data}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clusters := func(yaml string) []spec.Cluster {
		t.Helper()
		cs, err := spec.LoadRepo(writeRepo(t, map[string]string{"clusters/c.yaml": yaml}), spec.DefaultLayout)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	pg := func(name string) string {
		return "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata:\n  name: " + name + "\nspec:\n  version: \"15.10\"\n  instances: 3\n  storage: 1Gi\n"
	}
	lags, err := readLags(ctx, c, ns, clusters(pg("shop")))
	if err != nil || lags["shop"]["shop-1"] != "under 16 MiB" || lags["shop"]["shop-2"] != "1 GiB or more" || lags["shop"]["shop-0"] != "" {
		t.Fatalf("lags %v, %v", lags, err)
	}
	if lags, err := readLags(ctx, c, ns, clusters(pg("new"))); err != nil || len(lags) != 0 {
		t.Fatalf("a cluster with no status: %v, %v", lags, err)
	}
	if _, err := readLags(ctx, c, ns, clusters(pg("broken"))); err == nil || !strings.Contains(err.Error(), "status of PostgresCluster/broken") {
		t.Fatalf("a broken status: %v", err)
	}

	s := clusterStatus{Kind: spec.PostgresKind, Name: "shop", Observed: true, Desired: 3, Members: []memberStatus{
		{Name: "shop-0", Role: "primary", Version: "15.10", Ready: true},
		{Name: "shop-1", Role: "replica", Version: "15.10", Ready: true, Lag: lags["shop"]["shop-1"]},
		{Name: "shop-2", Role: "replica", Version: "15.10", Ready: true, Lag: lags["shop"]["shop-2"]},
	}}
	var out bytes.Buffer
	if err := writeClusterStatus(&out, style{}, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\tLAG\n", "shop-0\tprimary\t15.10\tyes\t-\t-\n", "shop-2\treplica\t15.10\tyes\t-\t1 GiB or more\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
