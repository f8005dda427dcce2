package agent

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
)

// ErrNoMember is the error of a keeper's BackupSource that found no
// member to back up from.
var ErrNoMember = errors.New("no ready member to back up from")

// ReadyMembers lists the cluster's member pods (app is the kind's app
// label value; MemberPods proves them) that are ready and have an address, the highest ordinal first: what each keeper's
// BackupSource picks from.
func ReadyMembers(ctx context.Context, c kubernetes.Interface, namespace, app, cluster string) ([]corev1.Pod, error) {
	pods, _, err := MemberPods(ctx, c, namespace, app, cluster)
	if err != nil {
		return nil, err
	}
	ready := slices.DeleteFunc(pods, func(p corev1.Pod) bool { return !podReady(&p) || p.Status.PodIP == "" })
	slices.SortFunc(ready, func(a, b corev1.Pod) int { return podRank(b) - podRank(a) })
	return ready, nil
}

// memberSelector selects the cluster's member pods (contract.Selector).
func memberSelector(app, cluster string) string {
	return k8slabels.SelectorFromSet(contract.Selector(app, cluster)).String()
}

// podRank orders members by ordinal.
func podRank(p corev1.Pod) int {
	n, _ := contract.PodOrdinal(p.Name)
	return n
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
