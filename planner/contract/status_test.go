package contract

import "testing"

func TestLagClass(t *testing.T) {
	for _, c := range []struct {
		bytes uint64
		want  string
	}{
		{0, "under 16 MiB"}, {16<<20 - 1, "under 16 MiB"}, {16 << 20, "under 1 GiB"},
		{1<<30 - 1, "under 1 GiB"}, {1 << 30, "1 GiB or more"}, {1 << 40, "1 GiB or more"},
	} {
		if got := LagClass(c.bytes); got != c.want {
			t.Errorf("LagClass(%d) = %q, want %q", c.bytes, got, c.want)
		}
	}
}

func TestPostgresMembers(t *testing.T) {
	ms, err := PostgresMembers(`{"primary":"db-0","members":[{"name":"db-0","role":"primary","answer":"primary"},{"name":"db-1","role":"replica","answer":"streaming replica","lag":"under 16 MiB"}]}`)
	if err != nil || len(ms) != 2 || ms[1].Lag != "under 16 MiB" || ms[0].Lag != "" {
		t.Fatalf("%+v, %v", ms, err)
	}
	if ms, err := PostgresMembers(""); err != nil || ms != nil {
		t.Fatalf("empty: %+v, %v", ms, err)
	}
	if _, err := PostgresMembers("{"); err == nil {
		t.Fatal("a broken document was read")
	}
}
