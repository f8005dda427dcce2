package certs

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// testLeastPrivilege runs the Keeper and Files under Roles that grant
// what the runtime and the members get and nothing more: create secrets
// and get/update the three by name for the runtime, and its status
// ConfigMap (the record of its CAs, proof.go), get of the server and
// client Secrets by name for a member; no list, no watch.
func testLeastPrivilege(t *testing.T, b *bed) {
	ctx := context.Background()
	for _, r := range []struct {
		user  string
		rules []rbacv1.PolicyRule
	}{
		{"lp-runtime", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "update"},
				ResourceNames: []string{"lp-ca", "lp-server-tls", "lp-superuser-tls"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "update"},
				ResourceNames: []string{"lp-cairn-status"}},
		}},
		{"lp-member", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"},
				ResourceNames: []string{"lp-server-tls", "lp-superuser-tls"}},
		}},
	} {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: r.user}, Rules: r.rules}
		if _, err := b.c.RbacV1().Roles(b.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.user},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: r.user}}}
		if _, err := b.c.RbacV1().RoleBindings(b.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk := newClock()
	k := b.keeper(t, "lp", clk)
	k.Client = b.as(t, "lp-runtime")
	_, written := b.ensure(t, k)
	if len(written) != 3 {
		t.Fatalf("ensure wrote %v", written)
	}
	clk.advance(2 * time.Hour) // past two thirds of 3h leaves
	if _, written := b.ensure(t, k); len(written) != 2 {
		t.Fatalf("ensure after the leaves are due wrote %v", written)
	}
	f := b.files(t, "lp")
	f.Client = b.as(t, "lp-member")
	if _, err := f.Sync(ctx); err != nil {
		t.Fatalf("sync as a member: %v", err)
	}
	if _, err := f.Material(ctx); err != nil {
		t.Fatalf("material as a member: %v", err)
	}
}

// as is a client impersonating user.
func (b *bed) as(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	cfg := b.cp.Config()
	cfg.Impersonate.UserName = user
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
