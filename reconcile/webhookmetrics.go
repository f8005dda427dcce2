package reconcile

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The reasons cairn_reconcile_webhook_refused_total counts, each the
// refusal of one request (or, for connections and header, of one
// connection).
const (
	refusedMethod      = "method"      // not a POST (405)
	refusedNoSecret    = "no_secret"   // no secret configured (401)
	refusedSignature   = "signature"   // a missing, malformed or wrong signature (401)
	refusedDelivery    = "delivery_id" // a missing or malformed X-GitHub-Delivery (400)
	refusedFormat      = "format"      // a Content-Type GitHub does not send (415)
	refusedTooLarge    = "too_large"   // a body over the bound (413)
	refusedSlow        = "slow"        // a body not read in time (408)
	refusedCutOff      = "cut_off"     // a reader cut off for a newer request (408)
	refusedUnreadable  = "unreadable"  // a body that broke off (400)
	refusedReplay      = "replay"      // a delivery ID or signature seen before (409)
	refusedPayload     = "payload"     // a signed body that is not GitHub's JSON or form (400)
	refusedConnections = "connections" // a connection closed for a newer one
	refusedHeader      = "header"      // a request whose header was too large, malformed or slow
)

// webhookReasons are the refusal reasons, each with a series from the
// start.
var webhookReasons = []string{refusedMethod, refusedNoSecret, refusedSignature, refusedDelivery, refusedFormat,
	refusedTooLarge, refusedSlow, refusedCutOff, refusedUnreadable, refusedReplay, refusedPayload,
	refusedConnections, refusedHeader}

// WebhookMetrics are the webhook's metrics (Webhook.Metrics):
//
//	cairn_reconcile_webhook_deliveries_total        signed deliveries accepted (202)
//	cairn_reconcile_webhook_refused_total{reason}   requests and connections refused, by reason
//
// A nil *WebhookMetrics counts nothing.
type WebhookMetrics struct {
	deliveries prometheus.Counter
	refusals   *prometheus.CounterVec
}

// NewWebhookMetrics registers the webhook's metrics with reg.
func NewWebhookMetrics(reg prometheus.Registerer) (*WebhookMetrics, error) {
	m := &WebhookMetrics{
		deliveries: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_reconcile_webhook_deliveries_total",
			Help: "Signed webhook deliveries accepted (202), whether or not they asked for a pass."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_reconcile_webhook_refused_total",
			Help: "Webhook requests and connections refused, by reason (docs/metrics.md)."}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.deliveries, m.refusals} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("webhook metrics: %w", err)
		}
	}
	for _, r := range webhookReasons {
		m.refusals.WithLabelValues(r)
	}
	return m, nil
}

func (m *WebhookMetrics) accepted() {
	if m != nil {
		m.deliveries.Inc()
	}
}

func (m *WebhookMetrics) refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}
