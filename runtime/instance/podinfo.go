package instance

import (
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// RoleLabelFile returns a reader of the cairn.dev/role label from the
// downward API's labels file (lines key="value"); "" when absent.
func RoleLabelFile(path string) func() string {
	return func() string {
		data, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && k == "cairn.dev/role" {
				if s, err := strconv.Unquote(v); err == nil {
					return s
				}
			}
		}
		return ""
	}
}

// HeadlessPeers returns every member's address behind a headless Service
// that publishes not-ready addresses, with port.
func HeadlessPeers(host string, port int) func(ctx context.Context) []string {
	return func(ctx context.Context) []string {
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return nil
		}
		slices.Sort(ips)
		out := make([]string, len(ips))
		for i, ip := range ips {
			out[i] = net.JoinHostPort(ip, strconv.Itoa(port))
		}
		return out
	}
}
