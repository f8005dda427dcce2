package agent

import "github.com/prometheus/client_golang/prometheus"

// Register registers every collector with reg: the kinds' metrics and
// the agent's own.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// BoolGauge is a gauge's value of b: 1 or 0.
func BoolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
