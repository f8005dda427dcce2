package testbed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Addresses gives every member of every cluster its own loopback address,
// as pods get their own IPs: 127.a.b.(16*cluster + ordinal + 1), with a
// and b drawn per bed so that beds of tests running at once do not meet.
type Addresses struct {
	prefix   string
	mu       sync.Mutex
	clusters []string
}

// NewAddresses returns a new set of addresses.
func NewAddresses() *Addresses {
	return &Addresses{prefix: fmt.Sprintf("127.%d.%d.", 10+rand.IntN(240), 10+rand.IntN(240))}
}

// IP is the address of member ordinal ord of cluster.
func (a *Addresses) IP(cluster string, ord int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := 0
	for ; i < len(a.clusters) && a.clusters[i] != cluster; i++ {
	}
	if i == len(a.clusters) {
		a.clusters = append(a.clusters, cluster)
	}
	return a.prefix + strconv.Itoa(16*i+ord+1)
}

// MountConfigMap writes the ConfigMap's keys as files into a new folder
// under dir, as a kubelet mounts a ConfigMap volume, and returns the
// folder.
func MountConfigMap(ctx context.Context, c kubernetes.Interface, namespace, name, dir string) (string, error) {
	cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("ConfigMap %s: %w", name, err)
	}
	mount, err := os.MkdirTemp(dir, name+"-")
	if err != nil {
		return "", err
	}
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(mount, k), []byte(v), 0o644); err != nil {
			os.RemoveAll(mount)
			return "", err
		}
	}
	return mount, nil
}
