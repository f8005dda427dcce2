package renderer

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cairn-dev/cairn/planner/contract"
)

// peerAccess is one ingress rule of a cluster's NetworkPolicy: who may
// reach which of the members' ports.
type peerAccess struct {
	from  []networkingv1.NetworkPolicyPeer
	ports []int32
}

// networkPolicy renders the cluster's NetworkPolicy
// (contract.NetworkPolicy), which selects the members' pods and admits
// only what rules list: everything else is refused, where the cluster's network
// enforces NetworkPolicies. Ingress only: what the members reach (the
// API server, object storage) is left to the namespace's own policies.
func networkPolicy(n names, rules ...peerAccess) Object {
	var ingress []networkingv1.NetworkPolicyIngressRule
	for _, r := range rules {
		rule := networkingv1.NetworkPolicyIngressRule{From: r.from}
		for _, p := range r.ports {
			rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(p))})
		}
		ingress = append(ingress, rule)
	}
	return Object{File: "networkpolicy.yaml", Obj: &networkingv1.NetworkPolicy{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
		ObjectMeta: n.meta(contract.NetworkPolicy(n.cluster), "network"),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *selector(n),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}}
}

// The peers of a cluster's NetworkPolicy, each pods of its own
// namespace: its members, its runtime, and its clients (the pods that
// carry contract.ClientLabel).
func membersPeer(n names) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: selector(n)}
}

func runtimePeer(n names) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: contract.Selector(contract.AppRuntime, n.cluster)}}
}

func clientsPeer(n names) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
		contract.ClientLabel(n.cluster): contract.ClientLabelValue}}}
}

// networkRestricted reports whether s renders the NetworkPolicy.
func networkRestricted(s Settings) bool { return s.Network == contract.NetworkRestricted }
