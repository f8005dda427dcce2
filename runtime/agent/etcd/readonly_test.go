package etcd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/agentbed"
)

// An etcd runtime writes nothing under a read-only root
// (agentbed.ReadOnlyRoot): one member behind a ready pod kv-0, whose
// status it reports.
func TestTheRuntimeWritesNothingUnderAReadOnlyRoot(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "etcd members")
	agentbed.ReadOnlyRoot(t, agentbed.ReadOnlyCase{Kind: spec.EtcdKind, Cluster: "kv",
		World: func(t *testing.T, cp *testbed.ControlPlane, ns string) string {
			return "127.0.0.1:" + strconv.Itoa(agentbed.NewBackupBedIn(t, cp, ns).Port)
		},
		Keeper: func(member string) agent.KeeperFactory {
			port, _ := strconv.Atoi(member[strings.LastIndexByte(member, ':')+1:])
			return Config{Endpoints: []string{"http://" + member}, Port: port}.Keeper
		},
		Kept: func(t *testing.T, c kubernetes.Interface, ns string) error {
			cm, err := c.CoreV1().ConfigMaps(ns).Get(context.Background(), contract.StatusConfigMap("kv"), metav1.GetOptions{})
			if err != nil || cm.Data[contract.StatusKeyEtcd] == "" {
				return fmt.Errorf("no etcd status: %v", err)
			}
			return nil
		}})
}
