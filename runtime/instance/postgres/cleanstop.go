package postgres

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// StopRecorder keeps a member's clean stop where the runtime reads it
// (contract.StopsConfigMap; APICleanStops in a pod).
type StopRecorder interface {
	// Record records the member's clean stop as a primary.
	Record(ctx context.Context, member string, s contract.PostgresCleanStop) error
	// Clear removes the member's record, if any: its server starts.
	Clear(ctx context.Context, member string) error
}

// stopRecordTimeout bounds recording a clean stop: the pod is
// terminating, and its grace period is the runtime's to hand over in.
const stopRecordTimeout = 5 * time.Second

// stopClean shuts the server down fast (SIGINT): PostgreSQL rolls back
// open transactions, and its shutdown checkpoint waits until its WAL
// senders sent all WAL, the checkpoint record too, to the streaming
// replicas. When the server exited cleanly as a primary, the shutdown
// checkpoint's location is recorded (Stops): the runtime promotes a
// replica that received WAL up to it at once, without its failover wait
// (docs/runtime.md). A stop that is not clean (killed after stopTimeout,
// an error exit) or of a replica records nothing.
func (p *Manager) stopClean(s *Server) error {
	if err := s.Stop(); err != nil {
		return err
	}
	if p.Stops == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopRecordTimeout)
	defer cancel()
	st, primary, err := p.controlData(ctx)
	switch {
	case err != nil:
		p.Log.Warn("clean stop not recorded", "member", p.Name, "err", err.Error())
	case !primary:
		return nil
	default:
		st.At = time.Now().UTC()
		if err := p.Stops.Record(ctx, p.Name, st); err != nil {
			p.Log.Warn("clean stop not recorded", "member", p.Name, "err", err.Error())
			return nil
		}
		p.Log.Info("clean stop recorded", "member", p.Name, "lsn", st.LSN, "timeline", st.Timeline)
	}
	return nil
}

// clearCleanStop removes this member's clean-stop record before its
// server starts: a record left from an earlier stop must never stand for
// a later one (the runtime also takes only a record made since it saw
// the primary down). An error is logged: the member starts all the same.
func (p *Manager) clearCleanStop(ctx context.Context) {
	if p.Stops == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, stopRecordTimeout)
	defer cancel()
	if err := p.Stops.Clear(cctx, p.Name); err != nil {
		p.Log.Warn("clean stop record not cleared", "member", p.Name, "err", err.Error())
	}
}

// controlData reads the stopped server's pg_control (pg_controldata):
// the last checkpoint's location and timeline, and whether it was shut
// down as a primary ("shut down"; a standby's is "shut down in
// recovery").
func (p *Manager) controlData(ctx context.Context) (contract.PostgresCleanStop, bool, error) {
	cmd := exec.CommandContext(ctx, p.bin("pg_controldata"), "-D", p.PGData)
	cmd.Env = instance.ChildEnv("LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.Credential}
	out, err := cmd.Output()
	if err != nil {
		return contract.PostgresCleanStop{}, false, fmt.Errorf("pg_controldata: %w", err)
	}
	return parseControlData(string(out))
}

// parseControlData reads pg_controldata's output (LC_ALL=C).
func parseControlData(out string) (contract.PostgresCleanStop, bool, error) {
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	state, ok := fields["Database cluster state"]
	if !ok {
		return contract.PostgresCleanStop{}, false, fmt.Errorf("pg_controldata: no %q line", "Database cluster state")
	}
	if state != "shut down" {
		return contract.PostgresCleanStop{}, false, nil
	}
	lsn := fields["Latest checkpoint location"]
	if hi, lo, ok := strings.Cut(lsn, "/"); !ok || !isHex(hi) || !isHex(lo) {
		return contract.PostgresCleanStop{}, false, fmt.Errorf("pg_controldata: latest checkpoint location %q is no LSN", lsn)
	}
	tli, err := strconv.ParseInt(fields["Latest checkpoint's TimeLineID"], 10, 64)
	if err != nil {
		return contract.PostgresCleanStop{}, false, fmt.Errorf("pg_controldata: latest checkpoint's timeline: %w", err)
	}
	return contract.PostgresCleanStop{LSN: lsn, Timeline: tli}, true, nil
}

func isHex(s string) bool {
	_, err := strconv.ParseUint(s, 16, 32)
	return err == nil
}
