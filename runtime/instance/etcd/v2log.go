package etcd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"
)

// etcd before 3.5 answers its /health endpoint (the members' readiness
// probe) with a v2 quorum read that goes through raft: every probe leaves
// a v2 QGET request in every member's log. etcd 3.5 still applies such
// requests, but etcd 3.6 panics on any v2 request other than the member
// attributes and cluster version it converts ("detected disallowed v2 WAL
// for stage --v2-deprecation=write-only"), and etcd 3.7 reads no v2
// request at all ("unmarshal should never fail"), not even those: etcd
// 3.5 writes them itself while the cluster version is below 3.5, as when
// a cluster is created. A member replays its log from its newest
// snapshot on, and etcd takes a snapshot only every --snapshot-count
// applied entries (100,000 in 3.5, 10,000 in 3.6), so after a 3.4 -> 3.5
// upgrade the requests of the 3.4 days stay in the log and the first 3.6
// member fails to start, and a quiet cluster created at 3.5 fails the
// same way at its first 3.7 member. etcd's upgrade guide
// (upgrades/upgrade_3_6, "WAL has custom v2 data") says to start such
// members with --snapshot-count=1 until they have taken a snapshot.
//
// The instance manager does that: a member starting from its data, at a
// version whose next minor cannot replay a v2 request in its log, starts
// with --snapshot-count=1. It then snapshots after every applied entry,
// so the log it hands to the next minor holds no v2 request however late
// the last one came (a 3.4 member still probing during the 3.4 -> 3.5
// hop), until its next start finds the log clean and leaves the flag
// off. That start is the next minor's own, in an upgrade chain.

// etcdVersionLine is how etcd --version names its version.
var etcdVersionLine = regexp.MustCompile(`^etcd Version: (\d+\.\d+\.\d+)`)

// BinaryVersion is the version the etcd binary at bin reports
// ("3.5.35").
func BinaryVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := etcdVersionLine.FindStringSubmatch(sc.Text()); m != nil {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("%s --version names no version: %q", bin, out)
}

// logArgs are the flags a member starting from its data needs for its log
// (see above): --snapshot-count=1 while its log holds a v2 request the
// next minor cannot replay. A log that cannot be read adds nothing: etcd
// itself then says what is wrong with it.
func (e *Manager) logArgs() []string {
	major, minor, ok := parseMinor(e.Version)
	if !ok || major != 3 || minor < 5 || minor > 6 {
		// Unknown; a version before 3.5, whose next minor still applies
		// v2 requests (and which writes them itself); or 3.7 and later,
		// which start from no log with a v2 request in it.
		return nil
	}
	n, err := v2Requests(e.DataDir, nextMinorReplays(minor))
	switch {
	case err != nil:
		e.Log.Warn("cannot read the member's log; starting it as it is", "member", e.Name, "err", err.Error())
		return nil
	case n == 0:
		return nil
	}
	e.Log.Warn("the member's log holds v2 requests that etcd "+fmt.Sprintf("3.%d", minor+1)+" cannot replay; starting it with --snapshot-count=1 until its next start (etcd's 3.6 upgrade guide, WAL has custom v2 data)",
		"member", e.Name, "requests", n)
	return []string{"--snapshot-count", "1"}
}

// nextMinorReplays says which v2 requests the minor after 3.<minor>
// replays: etcd 3.6 (after 3.5) converts member attributes and the
// cluster version; 3.7 and later none.
func nextMinorReplays(minor int) func(method, path string) bool {
	if minor == 5 {
		return func(method, path string) bool {
			return method == "PUT" && (memberAttributes.MatchString(path) || path == "/0/version")
		}
	}
	return func(string, string) bool { return false }
}

// memberAttributes is the v2 path of a member's attributes, as etcd 3.6
// matches it.
var memberAttributes = regexp.MustCompile(`^/0/members/[[:xdigit:]]{1,16}/attributes$`)

// v2Requests counts the v2 requests in the log of the member at dataDir,
// from its newest snapshot on, that replays does not accept.
func v2Requests(dataDir string, replays func(method, path string) bool) (int, error) {
	walDir := filepath.Join(dataDir, "member", "wal")
	if !wal.Exist(walDir) {
		return 0, nil
	}
	lg := zap.NewNop()
	start, err := newestSnapshot(lg, dataDir)
	if err != nil {
		return 0, err
	}
	w, err := wal.OpenForRead(lg, walDir, start)
	if err != nil {
		return 0, fmt.Errorf("open log %s: %w", walDir, err)
	}
	defer w.Close()
	_, _, ents, err := w.ReadAll()
	if err != nil && len(ents) == 0 {
		return 0, fmt.Errorf("read log %s: %w", walDir, err)
	}
	n := 0
	for _, ent := range ents {
		if ent.GetType() != raftpb.EntryType_EntryNormal || len(ent.GetData()) == 0 {
			continue
		}
		if method, path, ok := v2Request(ent.GetData()); ok && !replays(method, path) {
			n++
		}
	}
	return n, nil
}

// newestSnapshot is the newest snapshot the member has both in its log and
// as a snapshot file: where its next start replays the log from.
func newestSnapshot(lg *zap.Logger, dataDir string) (*walpb.Snapshot, error) {
	inLog, err := wal.ValidSnapshotEntries(lg, filepath.Join(dataDir, "member", "wal"))
	if err != nil {
		return nil, fmt.Errorf("snapshots in the log: %w", err)
	}
	files, err := os.ReadDir(filepath.Join(dataDir, "member", "snap"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	onDisk := map[[2]uint64]bool{}
	for _, f := range files {
		// <term>-<index>.snap, each 16 hexadecimal digits.
		name, ok := strings.CutSuffix(f.Name(), ".snap")
		t, i, ok2 := strings.Cut(name, "-")
		term, err1 := strconv.ParseUint(t, 16, 64)
		index, err2 := strconv.ParseUint(i, 16, 64)
		if ok && ok2 && err1 == nil && err2 == nil {
			onDisk[[2]uint64{term, index}] = true
		}
	}
	start := &walpb.Snapshot{}
	for _, s := range inLog {
		if s.GetIndex() > start.GetIndex() && onDisk[[2]uint64{s.GetTerm(), s.GetIndex()}] {
			start = s
		}
	}
	return start, nil
}

// v2Methods are the methods of etcd's v2 requests.
var v2Methods = map[string]bool{"GET": true, "QGET": true, "HEAD": true, "PUT": true, "POST": true, "DELETE": true, "SYNC": true}

// v2Request reads a log entry's data as a v2 request: either a bare one
// (etcdserverpb.Request: 1 ID, 2 Method, 3 Path, ...) or one wrapped in
// an InternalRaftRequest's field 2 (V2, reserved since etcd 3.7). Every
// other InternalRaftRequest has no field 2.
func v2Request(data []byte) (method, path string, ok bool) {
	f2, f3, ok := fields23(data)
	switch {
	case !ok || f2 == nil:
		return "", "", false
	case v2Methods[string(f2)]:
		return string(f2), string(f3), true
	}
	m, p, ok := fields23(f2)
	if !ok || !v2Methods[string(m)] {
		return "", "", false
	}
	return string(m), string(p), true
}

// fields23 parses a protobuf message and returns its fields 2 and 3 when
// they are length-delimited; ok is false when data is no message.
func fields23(data []byte) (f2, f3 []byte, ok bool) {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, nil, false
		}
		data = data[n:]
		if typ == protowire.BytesType && (num == 2 || num == 3) {
			v, m := protowire.ConsumeBytes(data)
			if m < 0 {
				return nil, nil, false
			}
			if num == 2 {
				f2 = v
			} else {
				f3 = v
			}
			data = data[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, data)
		if m < 0 {
			return nil, nil, false
		}
		data = data[m:]
	}
	return f2, f3, true
}
