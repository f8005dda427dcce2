package postgres

import (
	"errors"
	"testing"
	"time"
)

// The lease's rules, at times the test chooses: ttl 30s, every 7.5s.
func TestLeaseRules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	cut := errors.New("the API server does not answer")
	// step is one event: a confirmation sent (send), answered (answer,
	// with the time it was sent) or a nudge, at a time.
	type step struct {
		at     float64
		send   bool
		answer *confirmation
		nudge  bool
	}
	answer := func(sent float64, label string, err error) *confirmation {
		return &confirmation{sent: at(sent), label: label, err: err}
	}
	for _, c := range []struct {
		name  string
		steps []step
		// want: the last step's verdict, the lease's end and the next
		// confirmation's time, in seconds from t0.
		want      verdict
		end, next float64
	}{
		{"a new lease confirms at once", nil, leaseKept, 30, 0},
		{"primary renews from when the confirmation was sent, not answered",
			[]step{{at: 0, send: true}, {at: 4, answer: answer(0, "primary", nil)}}, leaseKept, 30, 7.5},
		{"no label yet counts as primary",
			[]step{{at: 10, send: true}, {at: 10.2, answer: answer(10, "", nil)}}, leaseKept, 40, 17.5},
		{"fenced stops at once", []step{{at: 10, send: true}, {at: 10.1, answer: answer(10, "fenced", nil)}}, leaseLabelledAway, 30, 0},
		{"replica stops at once", []step{{at: 10, send: true}, {at: 10.1, answer: answer(10, "replica", nil)}}, leaseLabelledAway, 30, 0},
		{"an error keeps the end and retries within a second",
			[]step{{at: 10, send: true}, {at: 12, answer: answer(10, "", cut)}}, leaseKept, 30, 13},
		{"an error at the end expires the lease",
			[]step{{at: 29, send: true}, {at: 30, answer: answer(29, "", cut)}}, leaseExpired, 30, 31},
		{"a late answer renews from its send only",
			[]step{{at: 0, send: true}, {at: 1, answer: answer(0, "primary", nil)}, {at: 7.5, send: true}, {at: 37, answer: answer(7.5, "primary", nil)}}, leaseKept, 37.5, 15},
		{"a nudge makes the next confirmation due at once",
			[]step{{at: 0, send: true}, {at: 0.1, answer: answer(0, "primary", nil)}, {at: 3, nudge: true}}, leaseKept, 30, 3},
		{"a nudge waits nudgeGap after the last confirmation",
			[]step{{at: 0, send: true}, {at: 0.1, answer: answer(0, "primary", nil)}, {at: 0.1, nudge: true}}, leaseKept, 30, 0.25},
		{"a nudge while a confirmation is in flight is served by the next",
			[]step{{at: 0, send: true}, {at: 1, nudge: true}, {at: 2, answer: answer(0, "primary", nil)}}, leaseKept, 30, 2},
		{"a confirmation sent after a nudge serves it",
			[]step{{at: 0, send: true}, {at: 0.1, answer: answer(0, "primary", nil)}, {at: 3, nudge: true}, {at: 3, send: true}, {at: 3.1, answer: answer(3, "primary", nil)}}, leaseKept, 33, 10.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLease(t0, 30*time.Second, 7500*time.Millisecond)
			v := leaseKept
			for _, s := range c.steps {
				switch {
				case s.send:
					l.sending(at(s.at))
				case s.answer != nil:
					v = l.answered(*s.answer, at(s.at))
				case s.nudge:
					l.nudge(at(s.at))
				}
			}
			if v != c.want || !l.end.Equal(at(c.end)) || !l.next.Equal(at(c.next)) {
				t.Errorf("verdict %d, end %s, next %s; want %d, %s, %s", v, l.end.Sub(t0), l.next.Sub(t0), c.want, at(c.end).Sub(t0), at(c.next).Sub(t0))
			}
		})
	}
}

func TestLeaseTimings(t *testing.T) {
	for _, c := range []struct {
		every, ttl         time.Duration
		wantTTL, wantEvery time.Duration
	}{
		{0, 0, 10 * time.Second, 2500 * time.Millisecond},
		{0, 4 * time.Second, 4 * time.Second, time.Second},
		{500 * time.Millisecond, 0, 10 * time.Second, 500 * time.Millisecond},
	} {
		p := &Manager{ConfirmEvery: c.every, LeaseTTL: c.ttl}
		if ttl, every := p.leaseTimings(); ttl != c.wantTTL || every != c.wantEvery {
			t.Errorf("ConfirmEvery %s LeaseTTL %s: %s, %s; want %s, %s", c.every, c.ttl, ttl, every, c.wantTTL, c.wantEvery)
		}
	}
}
