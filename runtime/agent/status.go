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

	"github.com/cairn-dev/cairn/planner/observe"
)

// The runtime's report of an etcd cluster is the type planner/observe
// reads (observe.EtcdStatus under observe.StatusKey), so the two sides of
// the contract cannot drift apart.
type (
	etcdStatus = observe.EtcdStatus
	etcdMember = observe.EtcdMember
)

const etcdStatusKey = observe.StatusKey

// status lists the members, the leader (as the member with the highest
// raft term reports it: a cut-off old leader may still believe it leads)
// and each member's version, and the cluster version etcd reports.
func (l *Learners) status(ctx context.Context, cli *clientv3.Client) (etcdStatus, error) {
	st := etcdStatus{ObservedAt: time.Now().UTC().Format(time.RFC3339)}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := cli.MemberList(cctx)
	if err != nil {
		return st, fmt.Errorf("member list: %w", err)
	}
	var leader, term uint64
	for _, m := range list.Members {
		em := etcdMember{Name: m.Name, ID: strconv.FormatUint(m.ID, 16), PeerURLs: m.PeerURLs, Learner: m.IsLearner}
		if len(m.ClientURLs) > 0 {
			if s, err := cli.Status(cctx, m.ClientURLs[0]); err == nil {
				em.Version = s.Version
				if s.RaftTerm > term {
					leader, term = s.Leader, s.RaftTerm
				}
			}
			if st.ClusterVersion == "" {
				st.ClusterVersion = clusterVersion(cctx, m.ClientURLs[0])
			}
		}
		st.Members = append(st.Members, em)
	}
	for i := range st.Members {
		st.Members[i].Leader = st.Members[i].ID == strconv.FormatUint(leader, 16)
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

// statusHeartbeat is how often an unchanged status is written again, so
// its observedAt says the runtime still looks.
const statusHeartbeat = time.Minute

// writeEtcdStatus stores st in ConfigMap name, creating it, or updating it
// when the membership changed or the last write is a heartbeat old.
func writeEtcdStatus(ctx context.Context, c kubernetes.Interface, ns, name string, st etcdStatus) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "cairn-runtime"}},
			Data: map[string]string{etcdStatusKey: string(data)}}, metav1.CreateOptions{FieldManager: "cairn-runtime"})
		return wrapStatus(err)
	}
	if err != nil {
		return wrapStatus(err)
	}
	var old etcdStatus
	if json.Unmarshal([]byte(cm.Data[etcdStatusKey]), &old) == nil && sameStatus(old, st) {
		if at, err := time.Parse(time.RFC3339, old.ObservedAt); err == nil && time.Since(at) < statusHeartbeat {
			return nil
		}
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[etcdStatusKey] = string(data)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "cairn-runtime"})
	return wrapStatus(err)
}

func sameStatus(a, b etcdStatus) bool {
	a.ObservedAt, b.ObservedAt = "", ""
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func wrapStatus(err error) error {
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
