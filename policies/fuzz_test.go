package policies

import (
	"testing"
	"time"
)

// FuzzLoad: a policy file never panics the loader, whatever it holds.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(policyHead + "  maintenanceWindow: {schedule: '0 22 * * 1-5', duration: 2h, timeZone: Europe/Berlin}\n"))
	f.Add([]byte(policyHead + "  rules:\n  - name: r\n    expression: 'step.disruptive ? {\"verdict\": \"hold\"} : {\"verdict\": \"allow\"}'\n"))
	f.Add([]byte(policyHead + "  backupFreshness: {maxAge: 6h, kinds: [ScaleIn]}\n  selector: {a: b}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Load("f.yaml", data, now)
		if err == nil {
			for _, p := range set {
				_ = p.Name()
			}
		}
	})
}
