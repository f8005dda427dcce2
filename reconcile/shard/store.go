package shard

import (
	"context"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// store is where the Leases live: the API server (kubeStore). Every
// write is a compare-and-swap: update carries the resourceVersion last
// read and fails with a Conflict if the Lease changed since; create fails
// with AlreadyExists.
type store interface {
	list(ctx context.Context) ([]coordv1.Lease, error)
	get(ctx context.Context, name string) (*coordv1.Lease, error)
	create(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
	update(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
}

// maxLeases bounds a list: every shard, every slot and the trigger.
const maxLeases = MaxShards + MaxReplicas + 1

// kubeStore is the Leases of one namespace through client-go, each call
// bounded by timeout.
type kubeStore struct {
	leases    coordclient.LeaseInterface
	namespace string
	timeout   time.Duration
}

func (s kubeStore) list(ctx context.Context) ([]coordv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// A list without resourceVersion is a quorum read: a Lease renewed
	// before it is seen renewed.
	l, err := s.leases.List(ctx, metav1.ListOptions{LabelSelector: LabelLease, Limit: maxLeases})
	if err != nil {
		return nil, fmt.Errorf("list leases in %s: %w", s.namespace, err)
	}
	if l.Continue != "" {
		return nil, fmt.Errorf("list leases in %s: more than %d labelled %s", s.namespace, maxLeases, LabelLease)
	}
	return l.Items, nil
}

func (s kubeStore) get(ctx context.Context, name string) (*coordv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	l, err := s.leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get lease %s/%s: %w", s.namespace, name, err)
	}
	return l, nil
}

func (s kubeStore) create(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.leases.Create(ctx, l, metav1.CreateOptions{FieldManager: "cairn"})
	if err != nil {
		return nil, fmt.Errorf("create lease %s/%s: %w", s.namespace, l.Name, err)
	}
	return out, nil
}

func (s kubeStore) update(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "cairn"})
	if err != nil {
		return nil, fmt.Errorf("update lease %s/%s: %w", s.namespace, l.Name, err)
	}
	return out, nil
}
