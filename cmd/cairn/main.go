package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes (docs/cli.md has the table).
const (
	exitOK       = 0
	exitInvalid  = 1 // invalid input (specs, live state, policies, a kubeconfig) or a failure (git, GitHub, a cluster)
	exitUsage    = 2 // bad flags or arguments
	exitRefusals = 3 // a plan refuses a spec change, or (propose) a step's branch holds a commit that is not cairn's
	exitDiff     = 4 // cairn diff: the rendered objects differ from the live ones
	// A command a signal interrupts exits 128 + the signal's number, as a
	// shell reports it: 130 for SIGINT (Ctrl-C), 143 for SIGTERM. The
	// long-running commands (reconcile, runtime) stop cleanly on either
	// and exit 0.
	exitSignal = 128
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func main() {
	stop := tuneGC()
	stopProfile := startProfile(os.Stderr)
	display, args := invocation(os.Args)
	code := runAs(display, args, os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	return runAs("cairn", args, stdout, stderr)
}

// runAs runs the command line args of the program help and usage call
// display ("cairn", or "kubectl cairn" when kubectl runs it as a plugin).
func runAs(display string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := interruptible(context.Background())
	defer stop()
	root := newRoot(stdout, stderr)
	showAs(root, display)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	// An interrupted command says so once, not as a failure of its work.
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		fmt.Fprintf(stderr, "cairn: interrupted by %s\n", sig.Error())
		return exitSignal + int(sig.Signal)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, ee.err)
		}
		return ee.code
	}
	// Unmarked errors are failures of the work itself (a push, an API
	// call), but for the two usage errors cobra reports unmarked.
	fmt.Fprintln(stderr, "cairn:", err)
	if msg := err.Error(); strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "required flag(s)") {
		return exitUsage
	}
	return exitInvalid
}

// markUsage marks the errors cobra reports for flags and arguments as
// usage errors, on cmd and every command below it.
func markUsage(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{exitUsage, err} })
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return &exitError{exitUsage, err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markUsage(sub)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Plan day-2 changes of stateful clusters as reviewable pull requests",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newValidate(), newPlan(), newRender(), newStatus(), newDiff(), newPropose(), newReconcile(), newPR(), newObserve(), newCheck(), newBackup(), newRestore(), newPolicy(), newSchema(), newVersion(), newInstance(), newRuntime(), newSwitchover())
	addNowFlag(root)
	markUsage(root)
	return root
}

// signalError is the cause of a context SIGINT or SIGTERM ended.
type signalError struct{ syscall.Signal }

func (e signalError) Error() string {
	switch e.Signal {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return e.Signal.String()
}

// interruptible is ctx, cancelled with a signalError on the first SIGINT
// or SIGTERM; stop releases the signals.
func interruptible(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			// A second Ctrl-C kills, as kubectl's does, should a clean
			// stop hang.
			signal.Stop(sigs)
			cancel(signalError{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
