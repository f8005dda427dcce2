package postgres

import (
	"strings"
	"testing"
)

func TestParseControlData(t *testing.T) {
	const head = "pg_control version number:            1300\nCatalog version number:               202209061\n"
	for _, c := range []struct {
		name, out string
		primary   bool
		lsn       string
		tli       int64
		err       string
	}{
		{name: "a primary shut down", out: head + "Database cluster state:               shut down\nLatest checkpoint location:           0/3000060\nLatest checkpoint's TimeLineID:       2\n",
			primary: true, lsn: "0/3000060", tli: 2},
		{name: "a standby shut down", out: head + "Database cluster state:               shut down in recovery\nLatest checkpoint location:           0/3000060\nLatest checkpoint's TimeLineID:       1\n"},
		{name: "not shut down (a crash)", out: head + "Database cluster state:               in production\nLatest checkpoint location:           0/3000060\nLatest checkpoint's TimeLineID:       1\n"},
		{name: "no state", out: head, err: "no \"Database cluster state\" line"},
		{name: "a bad LSN", out: "Database cluster state:               shut down\nLatest checkpoint location:           nope\nLatest checkpoint's TimeLineID:       1\n", err: "is no LSN"},
		{name: "no timeline", out: "Database cluster state:               shut down\nLatest checkpoint location:           0/1\n", err: "timeline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, primary, err := parseControlData(c.out)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || primary != c.primary || s.LSN != c.lsn || s.Timeline != c.tli {
				t.Fatalf("got %+v primary=%v err=%v, want %s tli %d primary=%v", s, primary, err, c.lsn, c.tli, c.primary)
			}
		})
	}
}
