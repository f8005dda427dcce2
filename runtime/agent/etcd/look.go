package etcd

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdLook is what etcd says of its membership in one pass.
type etcdLook struct {
	members        []lookedMember
	clusterVersion string
	// listed: the membership came from etcd; otherwise it is the last
	// status's (no member answered the member list).
	listed bool
}

// lookedMember is one member, with what its own etcd reports.
type lookedMember struct {
	id         uint64
	name       string
	peerURLs   []string
	clientURLs []string
	learner    bool
	// answered: its Status call succeeded; the rest is from it.
	answered         bool
	version          string
	leader, term     uint64
	applied          uint64
	revision         int64
	noErrors         bool
	leads, following bool

	// dbSize, dbSizeInUse and quota are its database's (maint.go);
	// quota is 0 before etcd 3.6, which does not report it.
	dbSize, dbSizeInUse, quota int64
	// storageVersion and downgrade are what etcd 3.6 and later report of
	// its storage and of a downgrade (downgrade.go); empty and nil
	// before.
	storageVersion string
	downgrade      *etcdserverpb.DowngradeInfo
	// servesTLS: it serves TLS on its client port with the cluster's
	// certificate, verified (tls.go servedTLS).
	servesTLS bool
}

// healthy: the member answers, reports no errors (an alarm it lists, such
// as NOSPACE, is no error of the member's) and follows a leader that, by
// the highest term any member reports, is the leader.
func (m lookedMember) healthy() bool { return m.answered && m.noErrors && m.following }

// voterHealth counts the voters, learners left out, and those healthy.
func voterHealth(members []lookedMember) (healthy, voters int) {
	for _, m := range members {
		if !m.learner {
			voters++
			if m.healthy() {
				healthy++
			}
		}
	}
	return healthy, voters
}

// quorate: more than half of the voters are healthy.
func quorate(healthy, voters int) bool { return voters > 0 && healthy >= voters/2+1 }

const callTimeout = 3 * time.Second

// look lists the members (linearizably, else from one member's own view,
// else the last status's) and asks each member for its status, all at
// once so that members that are down cost one timeout. tc is the client
// TLS configuration the members are reached with (nil: plain HTTP).
func look(ctx context.Context, cli *clientv3.Client, prev *etcdStatus, tc *tls.Config) etcdLook {
	var out etcdLook
	members, err := memberList(ctx, cli)
	if err == nil {
		out.listed = true
		for _, m := range members {
			out.members = append(out.members, lookedMember{id: m.ID, name: m.Name, peerURLs: m.PeerURLs, clientURLs: m.ClientURLs, learner: m.IsLearner})
		}
	} else if prev != nil {
		for _, m := range prev.Members {
			id, _ := strconv.ParseUint(m.ID, 16, 64)
			out.members = append(out.members, lookedMember{id: id, name: m.Name, peerURLs: m.PeerURLs, learner: m.Learner})
		}
	}
	var wg sync.WaitGroup
	for i := range out.members {
		wg.Go(func() { askStatus(ctx, cli, &out.members[i]) })
	}
	wg.Wait()
	markLeader(out.members)
	for _, m := range out.members {
		if m.answered && len(m.clientURLs) > 0 {
			if out.clusterVersion = clusterVersion(ctx, m.clientURLs[0], tc); out.clusterVersion != "" {
				break
			}
		}
	}
	return out
}

func memberList(ctx context.Context, cli *clientv3.Client) ([]*etcdserverpb.Member, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := cli.MemberList(cctx)
	if err == nil {
		return resp.Members, nil
	}
	// Without quorum a linearizable list fails; a member's own view still
	// says who the members are.
	sctx, scancel := context.WithTimeout(ctx, callTimeout)
	defer scancel()
	resp, serr := cli.MemberList(sctx, clientv3.WithSerializable())
	if serr != nil {
		return nil, err
	}
	return resp.Members, nil
}

// askStatus asks one member for its own status, at its client URL.
func askStatus(ctx context.Context, cli *clientv3.Client, m *lookedMember) {
	if len(m.clientURLs) == 0 {
		return // not started yet, or known only from the last status
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	s, err := cli.Status(cctx, m.clientURLs[0])
	if err != nil {
		return
	}
	m.answered, m.version, m.leader, m.term = true, s.Version, s.Leader, s.RaftTerm
	m.applied, m.noErrors = s.RaftAppliedIndex, !slices.ContainsFunc(s.Errors, func(e string) bool { return !isAlarmError(e) })
	m.dbSize, m.dbSizeInUse, m.quota = s.DbSize, s.DbSizeInUse, s.DbSizeQuota
	m.storageVersion, m.downgrade = s.StorageVersion, s.DowngradeInfo
	if s.Header != nil {
		m.revision = s.Header.Revision
	}
}

// markLeader takes the leader that the member with the highest raft term
// names (a cut-off old leader may still believe it leads) and marks who
// follows it.
func markLeader(members []lookedMember) {
	var leader, term uint64
	for _, m := range members {
		if m.answered && m.leader != 0 && m.term > term {
			leader, term = m.leader, m.term
		}
	}
	for i := range members {
		m := &members[i]
		m.following = leader != 0 && m.answered && m.leader == leader
		m.leads = m.following && m.id == leader
	}
}

// clusterVersion reads etcd's cluster version ("3.5") from /version,
// over TLS with tc when it is not nil.
func clusterVersion(ctx context.Context, clientURL string, tc *tls.Config) string {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, clientURL+"/version", nil)
	if err != nil {
		return ""
	}
	hc := http.DefaultClient
	if tc != nil {
		tr := &http.Transport{TLSClientConfig: tc}
		defer tr.CloseIdleConnections()
		hc = &http.Client{Transport: tr}
	}
	resp, err := hc.Do(req)
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
		return strconv.Itoa(major) + "." + strconv.Itoa(minor)
	}
	return ""
}
