package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
)

// TestTheBaseIsWhatRuns: whatever the spec says, the base of the rendered
// tree is what the live state says runs. Random live states (resources
// written as people write them, parameters, storage classes, template and
// config revisions, partitions, backups, runtimes with and without a
// read-only root) are planned against random specs; the base is synced to
// a real API server and observed back; what was observed must be the live
// state the plan was made from. So no spec change reaches a running
// cluster except through a step of its own.
func TestTheBaseIsWhatRuns(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	cp.InstallCRD(t, "cert-manager.io_certificates.yaml")
	c := cp.Client(t)
	pl := newPlanner()
	rd, err := newRenderer(renderer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 24 {
		desired, obs := baseCase(t, r, i)
		t.Run(fmt.Sprintf("%d-%s", i, obs.Kind), func(t *testing.T) {
			p := pl.PlanCluster(desired, obs, nil)
			tree, _, err := rd.Render(desired, p, "")
			if err != nil {
				t.Fatal(err)
			}
			ns := cp.Namespace(t, fmt.Sprintf("base%d", i))
			if _, err := cp.NewSync(t, ns).Apply(context.Background(), tree); err != nil {
				t.Fatal(err)
			}
			snap, err := (&observe.Observer{Client: c, Namespace: ns, Kinds: observeKinds()}).Observe(context.Background(), []spec.Cluster{desired})
			if err != nil || len(snap.Clusters) != 1 {
				t.Fatalf("observe: %v %v", snap, err)
			}
			if diff := runsDiff(obs, &snap.Clusters[0]); diff != "" {
				t.Errorf("the base renders %s (plan %s, steps %d)", diff, p.Status, len(p.Steps))
			}
		})
	}
}

var (
	baseResources = []*contract.Resources{nil, {Requests: contract.ResourceList{CPU: "0.5", Memory: "1024Mi"}},
		{Requests: contract.ResourceList{CPU: "2"}, Limits: contract.ResourceList{CPU: "2", Memory: "8Gi"}}}
	baseParameters = []map[string]string{nil, {"work_mem": "'8MB'"}, {"shared_buffers": "'1GB'", "max_connections": "'300'"}}
	specExtras     = []string{"", "resources: {requests: {cpu: '4', memory: 16Gi}}", "storageClass: fast",
		"postgresql: {parameters: {work_mem: 64MB, shared_buffers: 2GB}}", "backup: {schedule: '0 1 * * *', storageLocation: 's3://bkp/x'}"}
)

// baseCase is a random spec and a random, settled or half-way, live state
// of cluster db<i>.
func baseCase(t *testing.T, r *rand.Rand, i int) (spec.Cluster, *live.Cluster) {
	name := fmt.Sprintf("db%d", i)
	n := 1 + r.IntN(4)
	obs := &live.Cluster{Name: name, Storage: "10Gi", Bootstrap: contract.BootstrapExisting,
		StatefulSet: live.StatefulSet{Replicas: n, UpdatePartition: r.IntN(n), VolumeClaimStorage: "10Gi",
			Resources: baseResources[r.IntN(len(baseResources))], StorageClass: []string{"", "standard"}[r.IntN(2)],
			TemplateRevision: []string{"", "0123456789ab"}[r.IntN(2)], ReadOnlyRoot: r.IntN(2) == 0}}
	if r.IntN(2) == 0 { // rendered with its NetworkPolicy, or before it
		obs.Network = contract.NetworkRestricted
	}
	if r.IntN(2) == 0 {
		// Images from an older cairn and another registry: the base keeps
		// them, whatever the renderer's options name today.
		obs.StatefulSet.Images = map[string]string{"install-cairn": "registry.example/cairn:v0.9"}
	}
	if r.IntN(2) == 0 {
		obs.Backup = &live.Backup{Schedule: "0 2 * * *", TimeZone: spec.DefaultTimeZone, StorageLocation: "s3://bkp/" + name, RetentionCount: r.IntN(3)}
	}
	extra := specExtras[r.IntN(len(specExtras))]
	var doc string
	if r.IntN(2) == 0 {
		obs.Kind, obs.StatefulSet.Version = spec.EtcdKind, "3.5.21"
		if obs.StatefulSet.Images != nil {
			obs.StatefulSet.Images[contract.EtcdContainer] = "registry.example/etcd:v3.5.21"
		}
		// Rendered before etcd TLS, or requiring it, with the runtime's
		// CA or a cert-manager issuer.
		if r.IntN(2) == 0 {
			obs.TLS = contract.TLSRequire
			if r.IntN(2) == 0 {
				obs.TLSIssuer = &contract.IssuerRef{Name: "etcd-ca", Kind: contract.IssuerKind, Group: contract.CertManagerGroup}
			}
		}
		doc = fmt.Sprintf("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: %s}\nspec: {size: 3, version: '3.5.21', storage: 10Gi}\n", name)
		if extra != "" && extra[0] != 'p' {
			doc = fmt.Sprintf("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: %s}\nspec: {size: 3, version: '3.5.21', storage: 10Gi, %s}\n", name, extra)
		}
	} else {
		obs.Kind, obs.StatefulSet.Version = spec.PostgresKind, "15.4"
		if obs.StatefulSet.Images != nil {
			obs.StatefulSet.Images[contract.PostgresContainer] = "registry.example/postgres:15.4"
		}
		obs.SynchronousStandbys = r.IntN(n)
		if i%3 == 0 { // a person's switchover served (no draw: the other cases stay as they were)
			obs.SwitchoverServed = "maint-" + name
		}
		// Rendered before TLS, moving to it, or requiring it, with the
		// runtime's CA or a cert-manager issuer.
		if tls := contract.TLSModes[r.IntN(len(contract.TLSModes))]; contract.TLSOn(tls) {
			obs.TLS = tls
			if r.IntN(2) == 0 {
				obs.TLSIssuer = &contract.IssuerRef{Name: "company-ca", Kind: contract.ClusterIssuerKind, Group: contract.CertManagerGroup}
			}
		}
		if p := baseParameters[r.IntN(len(baseParameters))]; p != nil {
			obs.Parameters = p
			if r.IntN(2) == 0 {
				obs.ConfigRevision = contract.ConfigRevisionOf(p)
			}
		}
		doc = fmt.Sprintf("apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: %s}\nspec: {version: '15.4', instances: 3, storage: 10Gi", name)
		if extra != "" {
			doc += ", " + extra
		}
		doc += "}\n"
	}
	// Its runtime rendered before its read-only root, or after.
	obs.Runtime.ReadOnlyRoot = r.IntN(2) == 0
	cs, err := spec.Decode("spec.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return cs[0], obs
}

// runsDiff says what of the template and config observed back differs
// from the live state; "" when nothing does.
func runsDiff(want, got *live.Cluster) string {
	w, g := want.StatefulSet, got.StatefulSet
	switch {
	case w.Replicas != g.Replicas || w.UpdatePartition != g.UpdatePartition || w.Version != g.Version:
		return fmt.Sprintf("replicas/partition/version %d/%d/%s, live %d/%d/%s", g.Replicas, g.UpdatePartition, g.Version, w.Replicas, w.UpdatePartition, w.Version)
	case w.Images != nil && !maps.Equal(w.Images, g.Images):
		return fmt.Sprintf("images %v, live %v", g.Images, w.Images)
	case !spec.SameResources(w.Resources, g.Resources):
		return fmt.Sprintf("resources %+v, live %+v", g.Resources, w.Resources)
	case w.StorageClass != g.StorageClass || w.TemplateRevision != g.TemplateRevision || w.VolumeClaimStorage != g.VolumeClaimStorage:
		return fmt.Sprintf("class/revision/claim %q/%q/%q, live %q/%q/%q", g.StorageClass, g.TemplateRevision, g.VolumeClaimStorage, w.StorageClass, w.TemplateRevision, w.VolumeClaimStorage)
	case !maps.Equal(want.Parameters, got.Parameters) || want.ConfigRevision != got.ConfigRevision:
		return fmt.Sprintf("parameters %v (%q), live %v (%q)", got.Parameters, got.ConfigRevision, want.Parameters, want.ConfigRevision)
	case want.TLS != got.TLS || (want.TLSIssuer == nil) != (got.TLSIssuer == nil) || want.TLSIssuer != nil && *want.TLSIssuer != *got.TLSIssuer:
		return fmt.Sprintf("TLS %q %+v, live %q %+v", got.TLS, got.TLSIssuer, want.TLS, want.TLSIssuer)
	case w.ReadOnlyRoot != g.ReadOnlyRoot || want.Runtime != got.Runtime:
		return fmt.Sprintf("read-only roots: members %t, runtime %t; live %t, %t", g.ReadOnlyRoot, got.Runtime.ReadOnlyRoot, w.ReadOnlyRoot, want.Runtime.ReadOnlyRoot)
	case want.SwitchoverServed != got.SwitchoverServed:
		return fmt.Sprintf("switchover served %q, live %q", got.SwitchoverServed, want.SwitchoverServed)
	case want.SynchronousStandbys != got.SynchronousStandbys || want.Bootstrap != got.Bootstrap:
		return fmt.Sprintf("sync/bootstrap %d/%s, live %d/%s", got.SynchronousStandbys, got.Bootstrap, want.SynchronousStandbys, want.Bootstrap)
	case (want.Backup == nil) != (got.Backup == nil) || want.Backup != nil && (want.Backup.Schedule != got.Backup.Schedule || want.Backup.StorageLocation != got.Backup.StorageLocation || want.Backup.RetentionCount != got.Backup.RetentionCount):
		return fmt.Sprintf("backup %+v, live %+v", got.Backup, want.Backup)
	}
	return ""
}
