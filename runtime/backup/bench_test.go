package backup_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// BenchmarkBaseBackup1GiB backs up a PostgreSQL database of about 1 GiB
// three ways, side by side in one run: cairn to S3, cairn to a file://
// store, and plain `pg_basebackup -Ft -X fetch` to a local folder. Each
// iteration runs all three, in a rotating order so that a change in the
// machine's load falls on each alike. It reports each one's MB/s,
// cairn's ratios to pg_basebackup, and the CPU seconds per GB each
// spent: cairn's process, pg_basebackup's, the S3 server's, and
// PostgreSQL's (its walsender, counted when it exits) for each way.
//
// The S3 server is the benchmark's (streamingS3 over HTTPS on loopback,
// objects in memory: each part read once, an upload completed without
// reading it again, as a real endpoint does on its own machines), run as
// a child process so that its CPU is counted apart from cairn's; it
// shares the machine's cores with PostgreSQL and cairn, which no real
// endpoint does. It also reports how long the server took completing
// the uploads. CAIRN_BENCH_S3=s3://bucket/prefix uses a real endpoint
// instead, with the S3 settings of the environment (S3ConfigFromEnv).
// Measured figures, and what they say: docs/backups.md, "Measured".
//
//	go test ./runtime/backup -run '^$' -bench BaseBackup1GiB -benchtime 3x
func BenchmarkBaseBackup1GiB(b *testing.B) {
	ctx := context.Background()
	p := startPrimary(b)
	c := p.conn(b, p.port)
	if _, err := c.Exec(ctx, "CREATE TABLE big AS SELECT g AS id, repeat(md5(g::text), 28) AS v FROM generate_series(1, 1100000) g"); err != nil {
		b.Fatal(err)
	}
	var size int64
	if err := c.QueryRow(ctx, "SELECT pg_database_size('postgres')").Scan(&size); err != nil {
		b.Fatal(err)
	}
	b.Logf("database size %d MiB", size>>20)
	s3, server := benchS3(b)
	ways := []struct {
		name string
		run  func(b *testing.B) (wall, cpu time.Duration)
	}{
		{"cairn-s3", func(b *testing.B) (time.Duration, time.Duration) { return takeInto(ctx, b, s3, p) }},
		{"cairn-file", func(b *testing.B) (time.Duration, time.Duration) {
			return takeInto(ctx, b, &backup.FileStore{Root: b.TempDir()}, p)
		}},
		{"pg_basebackup", p.pgBasebackup},
	}
	wall, cpu, pg := make([]time.Duration, len(ways)), make([]time.Duration, len(ways)), make([]time.Duration, len(ways))
	var srv serverUsage // the S3 server's, during cairn-s3
	b.ResetTimer()
	for i := range b.N {
		for j := range ways {
			k := (i + j) % len(ways)
			before, pg0 := server.usage(b), p.cpu(b)
			w, used := ways[k].run(b)
			b.StopTimer()
			walsendersGone(ctx, b, c)
			b.StartTimer()
			wall[k], cpu[k], pg[k] = wall[k]+w, cpu[k]+used, pg[k]+p.cpu(b)-pg0
			if k == 0 {
				after := server.usage(b)
				srv.CPU += after.CPU - before.CPU
				srv.Completing += after.Completing - before.Completing
			}
		}
	}
	b.StopTimer()
	gb := float64(size) * float64(b.N) / 1e9
	mbps := make([]float64, len(ways))
	for k, w := range ways {
		mbps[k] = gb * 1e3 / wall[k].Seconds()
		b.ReportMetric(mbps[k], w.name+"-MB/s")
		b.ReportMetric(cpu[k].Seconds()/gb, w.name+"-cpu-s/GB")
		b.ReportMetric(pg[k].Seconds()/gb, w.name+"-postgres-cpu-s/GB")
	}
	b.ReportMetric(mbps[0]/mbps[2], "s3/pg_basebackup")
	b.ReportMetric(mbps[1]/mbps[2], "file/pg_basebackup")
	if server != nil {
		b.ReportMetric(srv.CPU.Seconds()/gb, "s3-server-cpu-s/GB")
		b.ReportMetric(srv.Completing.Seconds()/float64(b.N), "s3-server-complete-s/op")
	}
}

// walsendersGone waits until the backup's walsender has ended and the
// postmaster has counted its CPU.
func walsendersGone(ctx context.Context, b *testing.B, c *pgx.Conn) {
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender'").Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			time.Sleep(50 * time.Millisecond) // gone from the view; then reaped
			return
		}
		if time.Since(start) > time.Minute {
			b.Fatal("a walsender still runs a minute after its backup")
		}
	}
}

// cpu is the CPU PostgreSQL's processes that ended have spent, its
// walsenders among them (the postmaster reaps them: its children's
// time in /proc/PID/stat).
func (p *pgPrimary) cpu(b *testing.B) time.Duration {
	pid, err := os.ReadFile(filepath.Join(p.dir, "pgdata", "postmaster.pid"))
	var stat []byte
	if err == nil {
		first, _, _ := strings.Cut(string(pid), "\n")
		stat, err = os.ReadFile("/proc/" + strings.TrimSpace(first) + "/stat")
	}
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis; utime, stime,
	// cutime and cstime are the 14th to 17th of all, in clock ticks
	// (USER_HZ, 100 on Linux).
	_, rest, _ := strings.Cut(string(stat), ") ")
	fields := strings.Fields(rest)
	var ticks int64
	for _, f := range fields[11:15] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("postmaster's stat: %v", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// takeInto takes one backup into st, deletes it again (the S3 server
// holds its objects in memory) and returns how long the backup took and
// the CPU this process spent on it.
func takeInto(ctx context.Context, b *testing.B, st backup.Store, p *pgPrimary) (wall, cpu time.Duration) {
	cpu0, start := selfCPU(b), time.Now()
	m, err := backup.Take(ctx, st, "db", "PostgresCluster", p.source(), time.Now)
	if err != nil {
		b.Fatal(err)
	}
	wall, cpu = time.Since(start), selfCPU(b)-cpu0
	b.StopTimer()
	defer b.StartTimer()
	for _, obj := range []string{"data", "manifest.json"} {
		if err := st.Delete(ctx, backup.Key("db", m.ID)+"/"+obj); err != nil {
			b.Fatal(err)
		}
	}
	return wall, cpu
}

// pgBasebackup takes one backup with pg_basebackup -Ft -X fetch into a
// local folder and returns how long it took and its CPU.
func (p *pgPrimary) pgBasebackup(b *testing.B) (wall, cpu time.Duration) {
	dir := filepath.Join(p.dir, "pgbb")
	os.RemoveAll(dir)
	cmd := exec.Command(filepath.Join(p.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "replicator",
		"-D", dir, "-Ft", "-X", "fetch", "-c", "fast", "--no-manifest")
	cmd.Env = append(os.Environ(), "PGPASSWORD="+pgReplPW)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("pg_basebackup: %v %s", err, out)
	}
	wall = time.Since(start)
	b.StopTimer()
	os.RemoveAll(dir)
	b.StartTimer()
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// selfCPU is the CPU this process has spent, user and system.
func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchServer is the S3 server's process, asked through its stdin and
// stdout; nil when the benchmark uses a real endpoint.
type benchServer struct {
	ask    io.Writer
	answer *bufio.Reader
}

// serverUsage is what the server process has spent so far: CPU, and the
// time it took completing multipart uploads.
type serverUsage struct{ CPU, Completing time.Duration }

func (s *benchServer) usage(b *testing.B) serverUsage {
	var u serverUsage
	if s == nil {
		return u
	}
	line := []byte("?")
	_, err := fmt.Fprintln(s.ask, "usage")
	if err == nil {
		line, err = s.answer.ReadBytes('\n')
	}
	if err == nil {
		err = json.Unmarshal(line, &u)
	}
	if err != nil {
		b.Fatalf("the S3 server process: %v %q", err, line)
	}
	return u
}

// benchS3 is the store the benchmark backs up to: CAIRN_BENCH_S3's, or
// bucket "backups" of the tests' S3 server run as a child process (this
// test binary, in TestS3ServerProcess).
func benchS3(b *testing.B) (backup.Store, *benchServer) {
	if loc := os.Getenv("CAIRN_BENCH_S3"); loc != "" {
		st, err := backup.OpenFromEnv(loc)
		if err != nil {
			b.Fatal(err)
		}
		return st, nil
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestS3ServerProcess$")
	cmd.Env = append(os.Environ(), "CAIRN_BENCH_S3_SERVER=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	srv := &benchServer{ask: stdin, answer: bufio.NewReader(stdout)}
	var addr s3ServerAddr
	line, err := srv.answer.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &addr)
	}
	if err != nil {
		b.Fatalf("the S3 server process: %v %q", err, line)
	}
	return backup.S3StoreForBench(b, addr.Endpoint, addr.CA), srv
}

type s3ServerAddr struct {
	Endpoint string
	CA       []byte
}

// TestS3ServerProcess is no test: it is the S3 server of
// BenchmarkBaseBackup1GiB, in a process of its own so that its CPU is
// counted apart from cairn's. It prints the server's address, then
// answers each line on its stdin with its usage, until stdin closes.
func TestS3ServerProcess(t *testing.T) {
	if os.Getenv("CAIRN_BENCH_S3_SERVER") == "" {
		t.Skip("the S3 server of BenchmarkBaseBackup1GiB; it runs only as the benchmark's child process")
	}
	endpoint, ca, completing := backup.S3ServerForBench(t)
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(s3ServerAddr{Endpoint: endpoint, CA: ca}); err != nil {
		t.Fatal(err)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := out.Encode(serverUsage{CPU: selfCPU(t), Completing: completing()}); err != nil {
			t.Fatal(err)
		}
	}
}
