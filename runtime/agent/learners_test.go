package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/testbed"
)

// A member that joined as a learner is promoted once it has caught up.
func TestLearnerIsPromoted(t *testing.T) {
	ctx := context.Background()
	bin := testbed.Bin(t, "etcd")
	dir := t.TempDir()
	port := map[string][2]int{}
	for i := range 3 {
		port["e-"+strconv.Itoa(i)] = [2]int{testbed.FreePort(t), testbed.FreePort(t)}
	}
	url := func(m string, k int) string { return "http://127.0.0.1:" + strconv.Itoa(port[m][k]) }
	log := slog.New(slog.NewTextHandler(logWriter{t}, nil))
	manager := func(name string, eps []string) *instance.Etcd {
		return &instance.Etcd{Name: name, DataDir: filepath.Join(dir, name), Config: instance.Config{Bootstrap: "new", InitialMembers: 2, Token: "t"},
			PeerURL: func(m string) string { return url(m, 0) }, ClientURL: func(m string) string { return url(m, 1) },
			ListenPeerURL: url(name, 0), ListenClientURL: url(name, 1), Endpoints: eps, DialTimeout: 2 * time.Second, Log: log}
	}
	run := func(name string, args []string) {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	}
	for _, m := range []string{"e-0", "e-1"} {
		args, err := manager(m, nil).Args(ctx)
		if err != nil {
			t.Fatal(err)
		}
		run(m, args)
	}
	eps := []string{url("e-0", 1), url("e-1", 1)}
	var args []string
	eventually(t, "e-2 joins as a learner", func() (err error) {
		args, err = manager("e-2", eps).Args(ctx)
		return err
	})
	run("e-2", args)
	cp := testbed.Start(t)
	kube := cp.Client(t)
	ns := cp.Namespace(t, "db")
	// The runtime acts as its ServiceAccount, under the rendered Role.
	applyRenderedRBAC(t, kube, ns, etcdSpec)
	l := &Learners{Endpoints: eps, Client: asRuntime(t, cp.Config(), ns, "e"), Namespace: ns, Cluster: "e", Log: log}
	// The StatefulSet and its pods, as the controllers make them; e-2's
	// pod is not ready yet.
	three := int32(3)
	sel := map[string]string{"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "e"}
	tmpl := corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.7.3"}}}
	if _, err := kube.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "e"},
		Spec: appsv1.StatefulSetSpec{Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: sel}, ServiceName: "e",
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: tmpl}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setReady := func(name string, ready bool) {
		pod, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if pod, err = kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sel}, Spec: tmpl}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
		if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setReady("e-0", true)
	setReady("e-1", true)
	setReady("e-2", false)
	isVoter := func() (bool, error) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return false, err
		}
		defer cli.Close()
		resp, err := cli.MemberList(ctx)
		if err != nil {
			return false, err
		}
		for _, m := range resp.Members {
			if m.Name == "e-2" && !m.IsLearner {
				return true, nil
			}
		}
		return false, nil
	}
	// Not while its pod is not ready, however caught up it is.
	for range 3 {
		if err := l.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if v, _ := isVoter(); v {
			t.Fatal("a learner whose pod is not ready was promoted")
		}
		time.Sleep(300 * time.Millisecond)
	}
	setReady("e-2", true)
	eventually(t, "e-2 promoted", func() error {
		if err := l.Pass(ctx); err != nil {
			t.Fatalf("a pass fails: %v", err) // catching up is not an error
		}
		if v, err := isVoter(); err != nil || !v {
			return fmt.Errorf("e-2 is not yet a voter (%v)", err)
		}
		return nil
	})
	// The status the planner's observation reads: three voters, one
	// leader, and the cluster version.
	eventually(t, "status reported", func() error {
		if err := l.Pass(ctx); err != nil {
			return err
		}
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "e-cairn-status", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var st etcdStatus
		if err := json.Unmarshal([]byte(cm.Data[etcdStatusKey]), &st); err != nil {
			return err
		}
		leaders := 0
		for _, m := range st.Members {
			if m.Leader {
				leaders++
			}
			if m.Learner || m.Version != "3.7.3" {
				return fmt.Errorf("member %+v", m)
			}
		}
		if len(st.Members) != 3 || leaders != 1 || st.ClusterVersion != "3.7" || st.ObservedAt == "" {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
