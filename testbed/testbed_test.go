package testbed

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestControlPlaneStarts(t *testing.T) {
	cp := Start(t)
	ns := cp.Namespace(t, "cairn-test")
	got, err := cp.Client(t).CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil || got.Name != ns {
		t.Fatalf("%v %v", got, err)
	}
}
