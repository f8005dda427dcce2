package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// TestParameterSteps carries out a reload step and a rolling restart step
// on real PostgreSQL as the rendered manifests bring them: the config
// file every member reads changes (as the kubelet updates a mounted
// ConfigMap) and the cairn ConfigMap names the new revision. The runtime
// reloads, and reports what each member runs; a restart-only parameter
// is in effect once the member restarted.
func TestParameterSteps(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	pc, _ := setUp(t, cp, 2, 0, FailoverSettings{}, 30*time.Second)
	conf := filepath.Join(pc.m.dir, "postgresql.conf")
	base, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	render := func(rev string, params ...string) {
		t.Helper()
		text := string(base) + contract.PostgresParametersHeader + "\n"
		for _, p := range params {
			text += p + "\n"
		}
		text += fmt.Sprintf("%s = '%s'\n", contract.ConfigRevisionParameter, rev)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		setRenderedRevision(t, pc, rev)
	}
	show := func(ord int, name string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := pc.m.dial(ctx, ord)
		if err != nil {
			return err.Error()
		}
		defer c.Close(context.Background())
		var v string
		if err := c.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			return err.Error()
		}
		return v
	}
	reported := func(rev string, pending ...string) func() error {
		return func() error {
			st := configStatus(t, pc)
			for i := range pc.n {
				m := st.Members[fmt.Sprintf("pg-%d", i)]
				if m.Revision != rev || !slices.Equal(m.PendingRestart, pending) {
					return fmt.Errorf("pg-%d reports %+v, want revision %s pending %v", i, m, rev, pending)
				}
			}
			return nil
		}
	}

	// A reload step: work_mem changes on every member without a restart.
	render("r1", "work_mem = '8MB'")
	pc.waitFor("every member runs revision r1", reported("r1"))
	for i := range pc.n {
		if got := show(i, "work_mem"); got != "8MB" {
			t.Errorf("pg-%d: work_mem %s after the reload", i, got)
		}
	}

	// A restart step: shared_buffers waits for a restart, which the
	// members report, and is in effect after it.
	render("r2", "work_mem = '16MB'", "shared_buffers = '256MB'")
	pc.waitFor("every member loaded r2, shared_buffers pending", reported("r2", "shared_buffers"))
	if got := show(0, "work_mem"); got != "16MB" {
		t.Errorf("work_mem %s: the reload-only part applies at once", got)
	}
	if got := show(0, "shared_buffers"); got == "256MB" {
		t.Error("shared_buffers changed without a restart")
	}
	for _, ord := range []int{1, 0} { // one member at a time, as a rolling restart goes
		pc.nodes[ord].cancel() // the pod is deleted and created again
		<-pc.nodes[ord].done
		pc.nodes[ord] = nil
		pc.run(ord, "existing")
		pc.waitFor(fmt.Sprintf("pg-%d restarted with shared_buffers 256MB", ord), func() error {
			if got := show(ord, "shared_buffers"); got != "256MB" {
				return fmt.Errorf("shared_buffers %s", got)
			}
			return nil
		})
	}
	pc.waitFor("nothing pending on any member", reported("r2"))
	pc.waitFor("healthy after the restarts", pc.healthy)
}

// setRenderedRevision sets the cairn ConfigMap's config revision, as a
// synced parameter step does.
func setRenderedRevision(t *testing.T, pc *pgCluster, rev string) {
	t.Helper()
	ctx := context.Background()
	cms := pc.c.CoreV1().ConfigMaps(pc.ns)
	cm, err := cms.Get(ctx, contract.ConfigMap("pg"), metav1.GetOptions{})
	if err != nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")}, Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting}}
		cm.Data[contract.KeyConfigRevision] = rev
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	cm.Data[contract.KeyConfigRevision] = rev
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func configStatus(t *testing.T, pc *pgCluster) contract.PostgresConfigStatus {
	cm, err := pc.c.CoreV1().ConfigMaps(pc.ns).Get(context.Background(), contract.StatusConfigMap("pg"), metav1.GetOptions{})
	if err != nil {
		return contract.PostgresConfigStatus{}
	}
	st, _ := contract.ParsePostgresConfigStatus(cm.Data[contract.StatusKeyPostgresConfig])
	return st
}
