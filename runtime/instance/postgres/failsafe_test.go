package postgres

import (
	"testing"
	"time"
)

// The failsafe's count, read by read, at times the test chooses.
func TestFailsafeRules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const two = "pg-1 2 pg-0,pg-1"
	const three = "pg-1 2 pg-0,pg-1,pg-2"
	const five = "pg-1 2 pg-0,pg-1,pg-2,pg-3,pg-4"
	// read is one read: sent at, the setting, the timeline, and the
	// standbys' reply times (seconds from t0).
	type read struct {
		at       float64
		setting  string
		timeline int64
		replies  map[string]float64
	}
	for _, c := range []struct {
		name  string
		reads []read
		// want is what the last read renews the lease as of, in seconds
		// from t0; -1 for nothing.
		want float64
	}{
		{"no setting: nothing", []read{{0, "", 2, nil}, {0.5, "", 2, map[string]float64{"pg-0": 0.4}}}, -1},
		{"a first read compares with nothing",
			[]read{{0, three, 2, map[string]float64{"pg-0": -0.1}}}, -1},
		{"a reply after the read before counts as of that read",
			[]read{{0, two, 2, map[string]float64{"pg-0": -0.1}}, {0.5, two, 2, map[string]float64{"pg-0": 0.3}}}, 0},
		{"a reply older than the read before counts as of when it was sent",
			[]read{{10, two, 2, map[string]float64{"pg-0": 1}}, {10.5, two, 2, map[string]float64{"pg-0": 2}}}, 2},
		{"an unchanged reply is no follow",
			[]read{{0, three, 2, map[string]float64{"pg-0": -0.1}}, {0.5, three, 2, map[string]float64{"pg-0": -0.1}}}, -1},
		{"a standby that left and came back compares afresh",
			[]read{{0, three, 2, map[string]float64{"pg-0": -0.1}}, {0.5, three, 2, nil}, {1, three, 2, map[string]float64{"pg-0": 0.8}}}, -1},
		{"its own name is never counted",
			[]read{{0, three, 2, map[string]float64{"pg-1": -0.1}}, {0.5, three, 2, map[string]float64{"pg-1": 0.3}}}, -1},
		{"another primary's setting (a clone's or a rewind's copy) is ignored",
			[]read{{0, "pg-0 2 pg-0,pg-1,pg-2", 2, map[string]float64{"pg-2": -0.1}}, {0.5, "pg-0 2 pg-0,pg-1,pg-2", 2, map[string]float64{"pg-2": 0.3}}}, -1},
		{"a setting of another timeline (an earlier term) is ignored",
			[]read{{0, "pg-1 1 pg-0,pg-1,pg-2", 2, map[string]float64{"pg-2": -0.1}}, {0.5, "pg-1 1 pg-0,pg-1,pg-2", 2, map[string]float64{"pg-2": 0.3}}}, -1},
		{"a malformed setting is ignored",
			[]read{{0, "pg-1 2 pg-2,pg-0", 2, map[string]float64{"pg-2": -0.1}}, {0.5, "pg-1 2 pg-2,pg-0", 2, map[string]float64{"pg-2": 0.3}}}, -1},
		{"three members: one of two is not enough",
			[]read{{0, three, 2, map[string]float64{"pg-0": -0.1, "pg-2": -0.1}}, {0.5, three, 2, map[string]float64{"pg-0": 0.3, "pg-2": -0.1}}}, -1},
		{"a standby not among the members counts for nothing",
			[]read{{0, three, 2, map[string]float64{"pg-7": -0.1}}, {0.5, three, 2, map[string]float64{"pg-7": 0.3}}}, -1},
		{"every other member must follow: three of four is not enough",
			[]read{
				{0, five, 2, map[string]float64{"pg-0": -0.1, "pg-2": -0.1, "pg-3": -0.1, "pg-4": -0.1}},
				{0.5, five, 2, map[string]float64{"pg-0": 0.3, "pg-2": 0.3, "pg-3": 0.3, "pg-4": -0.1}},
			}, -1},
		{"five members: as of the earliest of the others' follows",
			[]read{
				{0, five, 2, map[string]float64{"pg-0": -0.1, "pg-2": -0.1, "pg-3": -0.1, "pg-4": -0.1}},
				{0.5, five, 2, map[string]float64{"pg-0": 0.3, "pg-2": -0.1, "pg-3": -0.1, "pg-4": 0.4}},
				{1, five, 2, map[string]float64{"pg-0": 0.3, "pg-2": 0.7, "pg-3": -0.1, "pg-4": 0.4}},
				{1.5, five, 2, map[string]float64{"pg-0": 1.2, "pg-2": 1.2, "pg-3": 1.3, "pg-4": 1.4}},
			}, 1},
		{"an old follow keeps counting, renewing no later than it was",
			[]read{{0, two, 2, map[string]float64{"pg-0": -0.1}}, {0.5, two, 2, map[string]float64{"pg-0": 0.3}}, {20, two, 2, map[string]float64{"pg-0": 0.3}}}, 0},
		{"the setting gone: nothing, and the count starts again",
			[]read{{0, three, 2, map[string]float64{"pg-0": -0.1}}, {0.5, three, 2, map[string]float64{"pg-0": 0.3}}, {1, "", 2, map[string]float64{"pg-0": 0.8}}, {1.5, three, 2, map[string]float64{"pg-0": 1.3}}}, -1},
		{"a single member is a majority alone",
			[]read{{3, "pg-1 2 pg-1", 2, nil}}, 3},
		{"two members need the other",
			[]read{{0, "pg-1 2 pg-0,pg-1", 2, map[string]float64{"pg-0": -0.1}}, {0.5, "pg-1 2 pg-0,pg-1", 2, map[string]float64{"pg-0": 0.2}}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newFailsafe("pg-1")
			var got time.Time
			for _, r := range c.reads {
				rd := failsafeRead{sent: at(r.at), setting: r.setting, timeline: r.timeline, replies: map[string]time.Time{}}
				for n, s := range r.replies {
					rd.replies[n] = at(s)
				}
				got = fs.observe(rd)
			}
			want := time.Time{}
			if c.want >= 0 {
				want = at(c.want)
			}
			if !got.Equal(want) {
				t.Fatalf("renews as of %v, want %v", got.Sub(t0), want.Sub(t0))
			}
		})
	}
}

// A lease the failsafe renews: it never ends sooner, and a label away
// still ends it at once.
func TestLeaseFollowed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLease(t0, 10*time.Second, 2500*time.Millisecond)
	l.followed(t0.Add(4 * time.Second))
	if want := t0.Add(14 * time.Second); !l.end.Equal(want) {
		t.Fatalf("end %v, want %v", l.end, want)
	}
	l.followed(t0.Add(time.Second))
	if want := t0.Add(14 * time.Second); !l.end.Equal(want) {
		t.Fatalf("an older follow moved the end to %v", l.end)
	}
	if v := l.answered(confirmation{sent: t0.Add(5 * time.Second), label: "fenced"}, t0.Add(5*time.Second)); v != leaseLabelledAway {
		t.Fatalf("a label away after a follow: %v, want labelled away", v)
	}
}
