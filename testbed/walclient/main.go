// Command walclient is `cairn instance wal` for the test beds, whose
// members have no /cairn-bin: archive_command and restore_command run it
// as "walclient --socket S push|fetch %f %p" (testbed.WALClient builds it).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/cairn-dev/cairn/runtime/wal"
)

func main() {
	socket := flag.String("socket", "", "the instance manager's WAL socket")
	flag.Parse()
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: walclient --socket S push|fetch WALFILE PATH")
		os.Exit(wal.ExitFailed)
	}
	code, err := wal.Client(context.Background(), *socket, flag.Arg(0), flag.Arg(1), flag.Arg(2))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wal:", err)
	}
	os.Exit(code)
}
