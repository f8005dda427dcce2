package kubenode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// StorageClass is the node's default StorageClass: local folders,
// provisioned once the scheduler has chosen the node
// (WaitForFirstConsumer), deleted with their claims.
const StorageClass = "local-path"

// provisionerName is the provisioner StorageClass names.
const provisionerName = "kubenode.cairn.test/local-path"

// selectedNode is the annotation the scheduler sets on a claim it has
// chosen a node for.
const selectedNode = "volume.kubernetes.io/selected-node"

// provisioner does what a local-path provisioner does, from the test
// process: a claim of its class, once the scheduler picked a node, gets
// a local PersistentVolume on a folder of that node's, bound to it (the
// volume's node affinity names the node, so the claim's pods go nowhere
// else); a volume released by its deleted claim is removed with its
// folder. On a stopped node nothing is made or removed: a local-path
// provisioner does that with a helper pod on the node.
type provisioner struct {
	client kubernetes.Interface
	nodes  []*Node
}

// volumes is the folder of node n's volumes.
func (n *Node) volumes() string { return filepath.Join(n.root, "volumes") }

func startProvisioner(t testing.TB, c *Cluster) {
	t.Helper()
	p := &provisioner{client: c.Client(t), nodes: c.Nodes}
	for _, n := range c.Nodes {
		if err := os.MkdirAll(n.volumes(), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mode, reclaim := storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: provisionerName, VolumeBindingMode: &mode, ReclaimPolicy: &reclaim,
	}
	if _, err := p.client.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create StorageClass %s: %v", StorageClass, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := p.pass(ctx); err != nil && ctx.Err() == nil {
				t.Logf("local-path provisioner: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// pass provisions every claim waiting for a volume and removes every
// released volume.
func (p *provisioner) pass(ctx context.Context) error {
	claims, err := p.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if pvc.Spec.VolumeName != "" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != StorageClass {
			continue
		}
		n := p.node(pvc.Annotations[selectedNode])
		if n == nil || n.Stopped() {
			continue
		}
		if err := p.provision(ctx, n, pvc); err != nil {
			return fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
	}
	volumes, err := p.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, pv := range volumes.Items {
		if pv.Spec.StorageClassName != StorageClass || pv.Status.Phase != corev1.VolumeReleased || pv.Spec.Local == nil {
			continue
		}
		n := p.nodeOfVolume(pv.Spec.Local.Path)
		if n == nil || n.Stopped() {
			continue
		}
		if err := os.RemoveAll(pv.Spec.Local.Path); err != nil {
			return fmt.Errorf("volume %s: %w", pv.Name, err)
		}
		err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("volume %s: %w", pv.Name, err)
		}
	}
	return nil
}

// node is the node of that name; nil for one the cluster does not have.
func (p *provisioner) node(name string) *Node {
	for _, n := range p.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// nodeOfVolume is the node whose volume folder holds path; nil for none.
func (p *provisioner) nodeOfVolume(path string) *Node {
	for _, n := range p.nodes {
		if filepath.Dir(path) == n.volumes() {
			return n
		}
	}
	return nil
}

// provision makes the claim's folder on node n, and its volume. The
// folder is open to every user, as local-path provisioners make them: the
// pod's fsGroup and user decide who owns what is written into it.
func (p *provisioner) provision(ctx context.Context, n *Node, pvc *corev1.PersistentVolumeClaim) error {
	name := "pvc-" + string(pvc.UID)
	path := filepath.Join(n.volumes(), name)
	if err := os.MkdirAll(path, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o777); err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": provisionerName}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClass,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name}}},
			}}}},
		},
	}
	_, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
