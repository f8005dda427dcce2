package reconcile

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the loop's health and the metrics of g:
//
//	/metrics  g's metrics, in the Prometheus exposition formats
//	/healthz  200 while the process serves
//	/readyz   200 while m is Ready for passes every interval, else 503 with why
//
// now is the clock Ready is asked at; nil is time.Now.
func (m *Metrics) Handler(g prometheus.Gatherer, interval time.Duration, now func() time.Time) http.Handler {
	if now == nil {
		now = time.Now
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := m.Ready(now(), interval); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
