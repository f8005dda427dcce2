package planner

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// The rules of spec.tls.issuerRef, one home for both kinds. Each kind
// keeps rule names of its own (postgres-tls-issuer-*, etcd-tls-issuer-*):
// PostgreSQL's names were published in plans, pull requests and docs
// before etcd had an issuer, and renaming them would change the plan of
// a refused PostgreSQL spec; the check and its wording are the same.

// issuerRules are one kind's rule names and the Service its server
// certificate is named after in the namespace refusal's message.
type issuerRules struct {
	namespace, change string
	service           func(cluster string) string
}

var (
	postgresIssuerRules = issuerRules{RulePostgresTLSIssuerNamespace, RulePostgresTLSIssuerChange, contract.PrimaryService}
	etcdIssuerRules     = issuerRules{RuleEtcdTLSIssuerNamespace, RuleEtcdTLSIssuerChange, contract.EtcdClientService}
)

// refuseIssuerNamespace: a cert-manager issuer's server certificate
// names the cluster's Services in its namespace, which must be known.
func refuseIssuerNamespace(r *Result, c spec.Cluster, rules issuerRules) {
	if c.Common().TLSIssuer != nil && c.Ref().Namespace == "" {
		r.refuse(rules.namespace, "spec.tls.issuerRef",
			"a cert-manager issuer's server certificate names the cluster's Services in its namespace (%s.<namespace>.svc), and this spec names none; set metadata.namespace",
			rules.service(c.Ref().Name))
	}
}

// refuseIssuerChange: the issuer of a cluster serving TLS stays. Its
// members and clients trust the CA that signed the certificates they
// hold; certificates from another CA would cut them off. A cluster
// rendered before TLS takes the spec's issuer with the step that moves it
// to TLS (PostgreSQL's tls-accept, etcd's first restart into accept).
func refuseIssuerChange(r *Result, c spec.Cluster, obs *live.Cluster, rules issuerRules) {
	mode, _ := contract.TLSMode(obs.TLS)
	if !contract.TLSOn(mode) {
		return
	}
	want, have := c.Common().TLSIssuer.Contract(), obs.TLSIssuer
	if want == nil && have == nil || want != nil && have != nil && *want == *have {
		return
	}
	r.refuse(rules.change, "spec.tls.issuerRef",
		"the cluster serves TLS with certificates from %s; moving to %s would give its members and clients certificates of a CA they do not trust. Keep the issuer, or create a new cluster with it and restore a backup into it (spec.restoreFrom)",
		issuerText(have), issuerText(want))
}

func issuerText(i *contract.IssuerRef) string {
	if i == nil {
		return "the cairn runtime's own CA"
	}
	return fmt.Sprintf("the cert-manager %s %s (%s)", i.Kind, i.Name, i.Group)
}
