package monitoring

import (
	"os"
	"testing"

	"github.com/cairn-dev/cairn/testbed"
)

// The PrometheusRule is accepted by a real kube-apiserver that serves
// the Prometheus Operator's own CRD, with a server-side dry run: its
// fields are the operator's, not only valid YAML.
func TestPrometheusRuleAcceptedByTheAPIServer(t *testing.T) {
	stream, err := os.ReadFile("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cp := testbed.Start(t)
	cp.InstallCRD(t, "monitoring.coreos.com_prometheusrules.yaml")
	ns := cp.Namespace(t, "monitoring")
	if err := cp.ServerSideApply(t, ns, stream, true); err != nil {
		t.Fatal(err)
	}
}
