package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
		port["e-"+strconv.Itoa(i)] = [2]int{freeTCP(t), freeTCP(t)}
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
	l := &Learners{Endpoints: eps, Client: kube, Namespace: ns, Cluster: "e", Log: log}
	eventually(t, "e-2 promoted", func() error {
		if err := l.Pass(ctx); err != nil {
			return err
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer cli.Close()
		resp, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		for _, m := range resp.Members {
			if m.Name == "e-2" && !m.IsLearner {
				return nil
			}
		}
		return fmt.Errorf("e-2 is not yet a voter")
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
		if len(st.Members) != 3 || leaders != 1 || st.ClusterVersion != "3.7" {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

func freeTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
