package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdStatusKey holds an etcdStatus in the status ConfigMap; planner/observe
// reads the same JSON.
const etcdStatusKey = "etcd.json"

// etcdStatus is the runtime's report of an etcd cluster.
type etcdStatus struct {
	ClusterVersion string       `json:"clusterVersion"`
	Members        []etcdMember `json:"members"`
}

type etcdMember struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Learner bool   `json:"learner"`
	Leader  bool   `json:"leader"`
	Version string `json:"version,omitempty"`
}

// status lists the members, the leader and each member's version, and
// the cluster version etcd reports.
func (l *Learners) status(ctx context.Context) (etcdStatus, error) {
	var st etcdStatus
	cli, err := clientv3.New(clientv3.Config{Endpoints: l.Endpoints, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return st, err
	}
	defer cli.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := cli.MemberList(cctx)
	if err != nil {
		return st, fmt.Errorf("member list: %w", err)
	}
	for _, m := range list.Members {
		em := etcdMember{Name: m.Name, ID: strconv.FormatUint(m.ID, 16), Learner: m.IsLearner}
		if len(m.ClientURLs) > 0 {
			if s, err := cli.Status(cctx, m.ClientURLs[0]); err == nil {
				em.Version, em.Leader = s.Version, s.Leader == m.ID
			}
			if st.ClusterVersion == "" {
				st.ClusterVersion = clusterVersion(cctx, m.ClientURLs[0])
			}
		}
		st.Members = append(st.Members, em)
	}
	return st, nil
}

// clusterVersion reads etcd's cluster version ("3.5") from /version.
func clusterVersion(ctx context.Context, clientURL string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/version", nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var v struct {
		Cluster string `json:"etcdcluster"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v); err != nil || v.Cluster == "not_decided" {
		return ""
	}
	if major, minor, ok := majorMinor(v.Cluster); ok {
		return major + "." + minor
	}
	return ""
}

func majorMinor(v string) (string, string, bool) {
	var a, b, c int
	if n, _ := fmt.Sscanf(v, "%d.%d.%d", &a, &b, &c); n < 2 {
		return "", "", false
	}
	return strconv.Itoa(a), strconv.Itoa(b), true
}

// writeStatus stores v as JSON under key of ConfigMap name, creating it or
// updating it only when the content changed.
func writeStatus(ctx context.Context, c kubernetes.Interface, ns, name, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "cairn-runtime"}},
			Data: map[string]string{key: string(data)}}, metav1.CreateOptions{FieldManager: "cairn-runtime"})
		return wrapStatus(err)
	}
	if err != nil {
		return wrapStatus(err)
	}
	if cm.Data[key] == string(data) {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[key] = string(data)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "cairn-runtime"})
	return wrapStatus(err)
}

func wrapStatus(err error) error {
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
