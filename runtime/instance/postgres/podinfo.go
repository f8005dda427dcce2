package postgres

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/cairn-dev/cairn/planner/contract"
)

// RoleLabelFile returns a reader of the contract.LabelRole label from the
// downward API's labels file (lines key="value"); "" when absent.
func RoleLabelFile(path string) func() string {
	return func() string {
		data, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && k == contract.LabelRole {
				if s, err := strconv.Unquote(v); err == nil {
					return s
				}
			}
		}
		return ""
	}
}

// HeadlessPeers returns every member's address behind a headless Service
// that publishes not-ready addresses, with port.
func HeadlessPeers(host string, port int) func(ctx context.Context) []string {
	return func(ctx context.Context) []string {
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return nil
		}
		slices.Sort(ips)
		out := make([]string, len(ips))
		for i, ip := range ips {
			out[i] = net.JoinHostPort(ip, strconv.Itoa(port))
		}
		return out
	}
}

// APIRoleLabel returns a reader of the pod's contract.LabelRole label
// through the API server (the pod's ServiceAccount may get its own pod):
// unlike the downward API's file, an answer is a confirmation that the
// API server can be reached and says so now.
func APIRoleLabel(c kubernetes.Interface, namespace, pod string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		got, err := c.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("read pod %s: %w", pod, err)
		}
		return got.Labels[contract.LabelRole], nil
	}
}

// APICleanStops is the StopRecorder of a pod: the cluster's
// contract.StopsConfigMap, which the runtime creates and the members'
// ServiceAccount may get and update by name. A write that meets another
// member's is tried again on the ConfigMap as it is now.
func APICleanStops(c kubernetes.Interface, namespace, cluster string) StopRecorder {
	return apiStops{c: c, namespace: namespace, name: contract.StopsConfigMap(cluster)}
}

type apiStops struct {
	c               kubernetes.Interface
	namespace, name string
}

func (a apiStops) Record(ctx context.Context, member string, s contract.PostgresCleanStop) error {
	v, err := contract.EncodeCleanStop(s)
	if err != nil {
		return err
	}
	return a.set(ctx, member, v)
}

func (a apiStops) Clear(ctx context.Context, member string) error { return a.set(ctx, member, "") }

// set sets the member's key ("" removes it).
func (a apiStops) set(ctx context.Context, member, value string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := a.c.CoreV1().ConfigMaps(a.namespace).Get(ctx, a.name, metav1.GetOptions{})
		if value == "" && apierrors.IsNotFound(err) {
			return nil // nothing recorded yet: the runtime has not created it
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", a.name, err)
		}
		if cm.Data[member] == value {
			return nil
		}
		if value == "" {
			delete(cm.Data, member)
		} else {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[member] = value
		}
		if _, err := a.c.CoreV1().ConfigMaps(a.namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update %s: %w", a.name, err)
		}
		return nil
	})
}
