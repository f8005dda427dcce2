package kubenode

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Expose forwards to a loopback server from an address of HostIP's (here
// loopback too: no node is needed to check the forwarding), and gives a
// URL back as a URL, an address as an address. The server sees the
// exposed address as the request's Host, so the links it makes from it
// (githubtest's pagination) lead back through the forwarder.
func TestExposeForwards(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello "+r.URL.Path+" via "+r.Host)
	}))
	defer srv.Close()
	c := &Cluster{HostIP: "127.0.0.2"}
	tests := []struct{ name, target, prefix string }{
		{"a URL", srv.URL + "/org", "http://127.0.0.2:"},
		{"an address", srv.Listener.Addr().String(), "127.0.0.2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Expose(t, tt.target)
			if !strings.HasPrefix(got, tt.prefix) || got == tt.target {
				t.Fatalf("Expose(%q) = %q, want %s...", tt.target, got, tt.prefix)
			}
			url := got
			if !strings.HasPrefix(url, "http://") {
				url = "http://" + url + "/org"
			}
			resp, err := http.Get(url + "/repo.git")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			host, _, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(got, "/org"), "http://"))
			if want := "hello /org/repo.git via " + host; !strings.HasPrefix(string(body), want) {
				t.Errorf("body %q, want %q...", body, want)
			}
		})
	}
}
