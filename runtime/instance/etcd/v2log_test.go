package etcd

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
)

// v2Request tells v2 requests, bare or wrapped in an InternalRaftRequest,
// from v3 ones.
func TestV2Request(t *testing.T) {
	v2 := func(method, path string) []byte {
		b := protowire.AppendTag(nil, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, 7)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, method)
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		return protowire.AppendString(b, path)
	}
	wrapped := func(inner []byte) []byte {
		b := protowire.AppendTag(nil, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, 9)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		return protowire.AppendBytes(b, inner)
	}
	// An InternalRaftRequest with a PutRequest (field 4) and a header
	// (field 100).
	put := protowire.AppendTag(nil, 4, protowire.BytesType)
	put = protowire.AppendBytes(put, []byte{0x0a, 0x01, 'k'})
	put = protowire.AppendTag(put, 100, protowire.BytesType)
	put = protowire.AppendBytes(put, []byte{0x08, 0x01})
	for _, tc := range []struct {
		name         string
		data         []byte
		method, path string
		ok           bool
	}{
		{"a bare QGET of /health", v2("QGET", "/0/health"), "QGET", "/0/health", true},
		{"a bare PUT of member attributes", v2("PUT", "/0/members/8e9e05c52164694d/attributes"), "PUT", "/0/members/8e9e05c52164694d/attributes", true},
		{"a wrapped cluster version", wrapped(v2("PUT", "/0/version")), "PUT", "/0/version", true},
		{"a v3 put", put, "", "", false},
		{"not a message", []byte{0xff, 0xff, 0xff}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, path, ok := v2Request(tc.data)
			if method != tc.method || path != tc.path || ok != tc.ok {
				t.Fatalf("v2Request = %q %q %v, want %q %q %v", method, path, ok, tc.method, tc.path, tc.ok)
			}
		})
	}
	replays := nextMinorReplays(5)
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"PUT", "/0/members/8e9e05c52164694d/attributes", true},
		{"PUT", "/0/version", true},
		{"QGET", "/0/health", false},
		{"PUT", "/foo", false},
	} {
		if got := replays(tc.method, tc.path); got != tc.want {
			t.Errorf("etcd 3.6 replays %s %s: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
	if nextMinorReplays(6)("PUT", "/0/version") {
		t.Error("etcd 3.7 replays no v2 request")
	}
}

// Issue 22's chain on one real member: etcd 3.4 answers each /health (the
// readiness probe) with a v2 request through raft; etcd 3.5 keeps them in
// its log, and etcd 3.6 cannot start from that log. Started by the
// instance manager, the 3.5 member takes --snapshot-count=1 and snapshots
// past them; 3.6 then starts and snapshots past what 3.5 wrote itself,
// and 3.7 starts without the flag.
func TestEtcdLogFrom34ReachesEtcd37(t *testing.T) {
	bins := map[string]string{}
	for _, minor := range []string{"3.4", "3.5", "3.6"} {
		p, err := filepath.Abs(filepath.Join("..", "..", ".cache", "bin", "etcd-"+minor))
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			t.Skipf("etcd %s not at .cache/bin/etcd-%s: run `make testbin`", minor, minor)
		}
		bins[minor] = p
	}
	ctx := context.Background()
	b := newEtcdBed(t, 1)
	m := b.manager("e-0", contract.BootstrapNew)
	b.bin = bins["3.4"]
	args, err := m.Args(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.start("e-0", args)
	health := m.ClientURL("e-0") + "/health"
	instancetest.Eventually(t, 20*time.Second, "etcd 3.4 healthy", func(ctx context.Context) error { return probe(ctx, health) })
	for range 5 {
		if err := probe(ctx, health); err != nil {
			t.Fatal(err)
		}
	}
	b.procs["e-0"].kill(syscall.SIGTERM)
	if n, err := v2Requests(m.DataDir, nextMinorReplays(5)); err != nil || n < 5 {
		t.Fatalf("the 3.4 member's log: %d v2 requests 3.6 cannot replay (%v), want the probes' 5 or more", n, err)
	}

	// Without the instance manager's flag: a copy of the data, through
	// 3.5, fails on 3.6.
	plain := filepath.Join(t.TempDir(), "plain")
	if out, err := exec.Command("cp", "-a", m.DataDir, plain).CombinedOutput(); err != nil {
		t.Fatalf("copy the data: %v %s", err, out)
	}
	run := func(bin, dataDir string, extra ...string) *proc {
		a := slices.Clone(m.baseArgs())
		a[slices.Index(a, "--data-dir")+1] = dataDir
		return start(t, nil, bin, append(a, extra...)...)
	}
	p := run(bins["3.5"], plain)
	instancetest.Eventually(t, 20*time.Second, "etcd 3.5 healthy", func(ctx context.Context) error { return probe(ctx, health) })
	p.kill(syscall.SIGTERM)
	p = run(bins["3.6"], plain)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("etcd 3.6 started from a log with the 3.4 probes' requests; the hazard this test guards against is gone")
	}
	if !strings.Contains(p.output(), "detected disallowed v2 WAL") {
		t.Fatalf("etcd 3.6 exited for another reason: %s", tail(p.output()))
	}

	// The instance manager's way.
	m.Version = "3.5.35"
	args, err = m.Args(ctx)
	if err != nil || !hasFlag(args, "--snapshot-count", "1") {
		t.Fatalf("a 3.5 member with those requests in its log starts with %v (%v), want --snapshot-count 1", args, err)
	}
	b.bin = bins["3.5"]
	b.start("e-0", args)
	instancetest.Eventually(t, 20*time.Second, "etcd 3.5 snapshots past the v2 requests", func(ctx context.Context) error {
		if err := probe(ctx, health); err != nil {
			return err
		}
		n, err := v2Requests(m.DataDir, nextMinorReplays(5))
		if err == nil && n > 0 {
			err = fmt.Errorf("%d left", n)
		}
		return err
	})
	b.procs["e-0"].kill(syscall.SIGTERM)

	// 3.6 starts; what v2 requests 3.5 wrote last (its own publish) it
	// snapshots past as well, for 3.7, which replays none.
	m.Version = "3.6.16"
	if args, err = m.Args(ctx); err != nil {
		t.Fatal(err)
	}
	b.bin = bins["3.6"]
	b.start("e-0", args)
	instancetest.Eventually(t, 30*time.Second, "etcd 3.6 healthy on the 3.5 member's data, with no v2 request left", func(ctx context.Context) error {
		if err := probe(ctx, health); err != nil {
			return err
		}
		n, err := v2Requests(m.DataDir, nextMinorReplays(6))
		if err == nil && n > 0 {
			err = fmt.Errorf("%d left", n)
		}
		return err
	})
	b.procs["e-0"].kill(syscall.SIGTERM)
	m.Version = "3.7.3"
	if args, err = m.Args(ctx); err != nil || slices.Contains(args, "--snapshot-count") {
		t.Fatalf("the 3.7 start: %v %v, want no --snapshot-count", args, err)
	}
	b.bin = binary(t, "CAIRN_ETCD", "etcd")
	b.start("e-0", args)
	instancetest.Eventually(t, 30*time.Second, "etcd 3.7 healthy", func(ctx context.Context) error { return probe(ctx, health) })
}

func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func hasFlag(args []string, flag, value string) bool {
	i := slices.Index(args, flag)
	return i >= 0 && i+1 < len(args) && args[i+1] == value
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
