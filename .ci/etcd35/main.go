// Command etcd is etcd 3.5, the minor before the one .ci/etcd36 builds, for
// the upgrade chain: built from go.etcd.io/etcd/server/v3 through the Go
// module proxy (no download site needed).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
