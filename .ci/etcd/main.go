// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3
// through the Go module proxy for cairn's tests (no download site needed).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
