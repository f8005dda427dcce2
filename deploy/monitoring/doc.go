// Package monitoring holds no code: it is where cairn's shipped
// monitoring artifacts live, and its tests check them.
//
//	rules.yaml              alert rules, a plain Prometheus rule file
//	rules_test.yaml         their promtool unit tests (make monitoring)
//	prometheusrule.yaml     the same groups as a monitoring.coreos.com/v1 PrometheusRule
//	grafana-dashboard.json  a Grafana dashboard of the runtime and of cairn reconcile
//
// The tests hold each artifact to the code: every metric a rule, a panel
// or a dashboard variable reads is one that cairn's Go sources register;
// the PrometheusRule wraps exactly the rule file's groups (go test
// ./deploy/monitoring -update rewrites it); the dashboard parses, every
// query reads the dashboard's Prometheus data source variable, and its
// queries pass promtool's parser; a real kube-apiserver serving the
// Prometheus Operator's CRD accepts the PrometheusRule (a server-side dry
// run, through the test bed). Nothing imports it.
package monitoring
