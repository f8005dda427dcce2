package testbed

import (
	"context"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdMember runs one real etcd member named name on data directory dir
// until the test ends, and returns its client URL and a client once it
// answers. With peerURL empty it makes a new one-member cluster on free
// loopback ports; a restored data directory carries its own membership,
// and peerURL is the peer URL it was restored with.
func EtcdMember(t testing.TB, name, dir, peerURL string) (string, *clientv3.Client) {
	t.Helper()
	Require(t, TierIntegration, "an etcd member")
	curl := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	args := []string{"--name", name, "--data-dir", dir, "--listen-client-urls", curl, "--advertise-client-urls", curl}
	if peerURL == "" {
		peerURL = "http://127.0.0.1:" + strconv.Itoa(freePort(t))
		args = append(args, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", name+"="+peerURL)
	}
	run(t, t.TempDir(), "etcd-"+name, Bin(t, "etcd"), append(args, "--listen-peer-urls", peerURL)...)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{curl}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	Eventually(t, "etcd member "+name+" answers", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "health")
		return err
	})
	return curl, cli
}
