package kubenode

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Expose makes a server of the test that listens on loopback (an
// httptest server, gittestserver) reachable from the node's pods: it
// listens on HostIP, on a port of its own, and forwards each connection
// to target. target is a URL (http://127.0.0.1:PORT/...) or a host:port;
// Expose returns the same with HostIP and its port in place of the host,
// as pods are to reach it. It stops when the test ends.
func (c *Cluster) Expose(t testing.TB, target string) string {
	t.Helper()
	u, perr := url.Parse(target)
	isURL := perr == nil && u.Host != ""
	to := target
	if isURL {
		to = u.Host
	}
	l, err := net.Listen("tcp", net.JoinHostPort(c.HostIP, "0"))
	if err != nil {
		t.Fatalf("expose %s: %v", target, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		forward(l, to)
	}()
	if isURL {
		u.Host = l.Addr().String()
		return u.String()
	}
	return l.Addr().String()
}

// forward accepts connections on l until it is closed, and copies each
// both ways to a connection of its own to addr.
func forward(l net.Listener, addr string) {
	for {
		in, err := l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go func() {
			defer in.Close()
			out, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(out, in)
				if tc, ok := out.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(in, out)
			if tc, ok := in.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			<-done
		}()
	}
}

// PodLogs returns the logs of every container of a pod, as the kubelet
// wrote them (`kubectl logs`, read from the nodes' log folders): each
// container's name, then its log.
func (c *Cluster) PodLogs(namespace, pod string) (string, error) {
	var files []string
	for _, n := range c.Nodes {
		f, err := filepath.Glob(filepath.Join(n.root, "pod-logs", namespace+"_"+pod+"_*", "*", "*.log"))
		if err != nil {
			return "", fmt.Errorf("pod logs of %s/%s: %w", namespace, pod, err)
		}
		files = append(files, f...)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("pod logs of %s/%s: %w", namespace, pod, err)
		}
		fmt.Fprintf(&b, "== %s\n%s", filepath.Base(filepath.Dir(f)), data)
	}
	return b.String(), nil
}
