// Command coredns is CoreDNS with only the plugins a test node's cluster
// DNS uses: names of Services and pods from the API server, nothing
// forwarded upstream (a test's DNS has no upstream). Built through the Go
// module proxy by `make testbin-node`, as CoreDNS documents for a build
// with a chosen set of plugins.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives are the plugins in the order CoreDNS's plugin.cfg runs them.
var directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
