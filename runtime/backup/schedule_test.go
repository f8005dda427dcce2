package backup

import (
	"strings"
	"testing"
	"time"
)

func TestScheduleMissedAndNext(t *testing.T) {
	utc := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, c := range []struct {
		name, schedule, tz  string
		last, now, wantNext string
		wantMissed          bool
	}{
		{"daily, on time", "0 2 * * *", "", "2026-11-30T02:00:05Z", "2026-11-30T12:00:00Z", "2026-12-01T02:00:00Z", false},
		{"daily, a run missed", "0 2 * * *", "", "2026-11-29T02:00:05Z", "2026-11-30T12:00:00Z", "2026-12-01T02:00:00Z", true},
		{"three runs missed: still one catch-up", "0 2 * * *", "", "2026-11-26T02:00:05Z", "2026-11-30T12:00:00Z", "2026-12-01T02:00:00Z", true},
		{"never backed up: wait for the schedule", "0 2 * * *", "", "", "2026-11-30T12:00:00Z", "2026-12-01T02:00:00Z", false},
		{"six fields with seconds", "*/30 * * * * *", "", "2026-11-30T12:00:00Z", "2026-11-30T12:00:20Z", "2026-11-30T12:00:30Z", false},
		{"descriptor", "@hourly", "", "2026-11-30T11:00:01Z", "2026-11-30T12:00:00Z", "2026-11-30T13:00:00Z", true},
		{"time zone", "0 2 * * *", "Europe/Berlin", "2026-11-30T01:00:05Z", "2026-11-30T12:00:00Z", "2026-12-01T01:00:00Z", false},
		{"spring forward skips 02:30 local", "30 2 * * *", "Europe/Berlin", "2027-03-27T01:30:05Z", "2027-03-28T12:00:00Z", "2027-03-29T00:30:00Z", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Policy{Schedule: c.schedule, TimeZone: c.tz}.Parse()
			if err != nil {
				t.Fatal(err)
			}
			var last time.Time
			if c.last != "" {
				last = utc(c.last)
			}
			if got := s.Missed(last, utc(c.now)); got != c.wantMissed {
				t.Errorf("missed %v, want %v", got, c.wantMissed)
			}
			if got := s.NextAfter(utc(c.now)).UTC(); !got.Equal(utc(c.wantNext)) {
				t.Errorf("next %s, want %s", got, c.wantNext)
			}
		})
	}
}

func TestPolicyFromConfig(t *testing.T) {
	ok := map[string]string{"backup.schedule": "0 2 * * *", "backup.storage-location": "s3://backups/p", "backup.retention.count": "7", "backup.retention.max-age": "30d"}
	p, on, err := PolicyFromConfig(ok)
	if err != nil || !on || p.Count != 7 || p.MaxAge != 30*24*time.Hour {
		t.Fatalf("%+v %v %v", p, on, err)
	}
	if _, on, err := PolicyFromConfig(map[string]string{}); on || err != nil {
		t.Fatalf("no policy: %v %v", on, err)
	}
	for key, bad := range map[string]string{"backup.schedule": "61 * * * *", "backup.retention.count": "0", "backup.retention.max-age": "soon", "backup.storage-location": "gs://x", "backup.time-zone": "Mars/Olympus"} {
		data := map[string]string{}
		for k, v := range ok {
			data[k] = v
		}
		data[key] = bad
		if _, _, err := PolicyFromConfig(data); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s=%s: %v", key, bad, err)
		}
	}
}
