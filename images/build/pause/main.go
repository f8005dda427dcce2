// Command pause is the pod sandbox of the test beds' real node: it holds
// the pod's namespaces and does nothing until it is told to stop, as
// Kubernetes' own pause does, and reaps the zombies it inherits as a
// pod's PID 1. It is cairn's own, a static Go binary, so no image is
// pulled for it.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("pause (cairn test beds)")
		return
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			return
		case <-children:
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
