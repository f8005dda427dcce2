package spec

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// pgConf runs the real PostgreSQL 15 server's `postgres -C` on a written
// postgresql.conf, as the postgres user when the tests run as root (the
// server refuses root).
type pgConf struct {
	dir  string
	cred *syscall.Credential
}

func newPGConf(t testing.TB) *pgConf {
	t.Helper()
	if _, err := os.Stat(pgBinary); err != nil {
		t.Skipf("no PostgreSQL 15: %v", err)
	}
	c := &pgConf{dir: t.TempDir()}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root needs a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// The test's temporary folders are root's, mode 0700.
		if err := os.Chmod(filepath.Dir(c.dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(c.dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	return c
}

// read writes conf and returns what the server reads for name, or its
// complaint.
func (c *pgConf) read(t testing.TB, conf, name string) (string, error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "postgresql.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pgBinary, "-C", name, "-D", c.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &confError{err, stderr.String()}
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

type confError struct {
	err    error
	stderr string
}

func (e *confError) Error() string { return e.err.Error() + ": " + e.stderr }

// typedParams are the parameters FuzzPostgresConf sets a value of, one of
// each type and unit, and those whose string value PostgreSQL parses.
var typedParams = []string{
	"work_mem", "shared_buffers", "max_wal_size", "log_parameter_max_length", "statement_timeout", "checkpoint_timeout",
	"log_rotation_age", "max_connections", "extra_float_digits", "wal_buffers", "max_stack_depth",
	"random_page_cost", "vacuum_cost_delay", "geqo_selection_bias", "enable_seqscan", "huge_pages",
	"compute_query_id", "bytea_output", "log_min_messages", "default_transaction_isolation",
	"search_path", "temp_tablespaces", "log_destination", "log_filename", "application_name",
}

// unquote reads a quoted value back as guc-file.l's lexer and
// DeescapeQuotedString do; ok is false where the lexer would fail.
func unquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		switch c := s[i]; c {
		case '\n':
			return "", false
		case '\'':
			if s[i+1] != '\'' || i+1 == len(s)-1 {
				return "", false
			}
			b.WriteByte('\'')
			i++
		case '\\':
			i++
			if i == len(s)-1 || s[i] == '\n' {
				return "", false
			}
			switch e := s[i]; {
			case e == 'n':
				b.WriteByte('\n')
			case e == 'r':
				b.WriteByte('\r')
			case e == 't':
				b.WriteByte('\t')
			case e == 'b':
				b.WriteByte('\b')
			case e == 'f':
				b.WriteByte('\f')
			case e >= '0' && e <= '7':
				n := 0
				for k := 0; k < 3 && i < len(s)-1 && s[i] >= '0' && s[i] <= '7'; k++ {
					n = n*8 + int(s[i]-'0')
					i++
				}
				i--
				b.WriteByte(byte(n))
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// FuzzPostgresConf: whatever the value, the written line is one line
// that PostgreSQL's lexer reads back as the value; PostgreSQL 15 itself
// accepts the file and reads the value back (log_line_prefix takes any
// string); and a value validation accepts for a typed parameter is one
// PostgreSQL accepts too.
func FuzzPostgresConf(f *testing.F) {
	for _, v := range []string{"", "plain", `trailing\`, `'`, `''`, `\'`, `\\'`, "a\nb", "a\rb\x00c", "tab\there",
		"#not a comment", "x' \narchive_command = 'id", "é ünï", "\x01\x7f", `\\\\`, "include 'x'", "64MB", "1.5GB",
		"30s", "1d", "-1", "0", "2147483647", "off", "TRUE", "try", "regress", "1e3", "\"$user\", public", "a,,b",
		`"a""b", c`, "stderr,csvlog", "log-%Y.log", "repeatable read", "4 kB", "010", "7680kB", "1.3kB"} {
		f.Add(v, uint8(len(v)))
	}
	// One value validation accepts for each typed parameter.
	valid := []string{"4MB", "128MB", "1GB", "1kB", "30s", "5min", "1d", "100", "-15", "-1", "7680kB",
		"1.1", "2ms", "1.5", "off", "try", "regress", "hex", "warning", "repeatable read",
		`"$user", public`, `a, "b c"`, "stderr, csvlog", "postgresql-%a.log", "app ' \\ name"}
	for i, v := range valid {
		if err := CheckParameter(typedParams[i], v, 15); err != nil {
			f.Fatalf("seed %s = %s: %v", typedParams[i], v, err)
		}
		f.Add(v, uint8(i))
	}
	c := newPGConf(f)
	f.Fuzz(func(t *testing.T, value string, which uint8) {
		if len(value) > 4096 {
			return
		}
		q := ParamValue(value).Quoted()
		if strings.ContainsAny(q, "\n\r") {
			t.Fatalf("%q: written over more than one line: %s", value, q)
		}
		if back, ok := unquote(q); !ok || back != value {
			t.Fatalf("%q: written %s, read back %q (%v)", value, q, back, ok)
		}
		conf := "log_line_prefix = " + q + "\n"
		name := typedParams[int(which)%len(typedParams)]
		accepted := CheckParameter(name, value, 15) == nil
		if accepted {
			conf += name + " = " + q + "\n"
		}
		got, err := c.read(t, conf, "log_line_prefix")
		if err != nil {
			t.Fatalf("PostgreSQL refuses %s = %s (accepted by validation: %v)\n%s: %v", name, q, accepted, conf, err)
		}
		if want, _, _ := strings.Cut(value, "\x00"); got != want {
			t.Fatalf("%q: PostgreSQL reads back %q", value, got)
		}
	})
}

// TestValidatedNumbersReadByPostgres: numbers at and around each typed
// parameter's bounds, in every unit, fractions that round: each one
// validation accepts, PostgreSQL 15 accepts too. Values go in batches,
// one per parameter per file.
func TestValidatedNumbersReadByPostgres(t *testing.T) {
	c := newPGConf(t)
	var batches []map[string]string
	accepted := 0
	for _, name := range typedParams {
		p := pgParams[name]
		if p.typ != pgInt && p.typ != pgReal {
			continue
		}
		i := 0
		for _, v := range numberCandidates(p) {
			if CheckParameter(name, v, 15) != nil {
				continue
			}
			if i == len(batches) {
				batches = append(batches, map[string]string{})
			}
			batches[i][name] = v
			i++
			accepted++
		}
	}
	for _, b := range batches {
		var conf strings.Builder
		for _, name := range sortedKeys(b) {
			conf.WriteString(name + " = " + ParamValue(b[name]).Quoted() + "\n")
		}
		if _, err := c.read(t, conf.String(), "work_mem"); err != nil {
			t.Errorf("PostgreSQL refuses what validation accepts:\n%s%v", conf.String(), err)
		}
	}
	t.Logf("%d values in %d files", accepted, len(batches))
}

func numberCandidates(p pgParam) []string {
	var out []string
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	for i, x := range []float64{p.min, p.max, p.max + 1, p.min + 0.5, p.max - 0.4, p.max + 0.4, 2.5} {
		if x > 1e300 {
			continue
		}
		out = append(out, f(x))
		for j, u := range unitNames(p.unit) {
			// A fraction of a larger unit rounds to the next smaller one.
			out = append(out, f(x/[]float64{1024, 1000, 60}[(i+j)%3])+u)
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
