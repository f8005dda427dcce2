package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// Loading a replaced CA. The runtime replaces a cluster's CA in two moves
// (runtime/certs/rotate.go): the new CA joins the bundle, ca.crt, and
// only an hour later (Keeper.CAOverlap) signs the leaves. etcd reads the
// bundle when it starts, so the member's supervisor (supervise.go) reads it
// every RestartTurns.Poll and, when the set of certificates in it
// differs from the set etcd started with, restarts etcd in its turn
// (turn.go). It compares sets, not bytes: the second move reorders
// the bundle (the new CA first) without changing what it trusts, and
// needs no restart.

// caBundle is the mounted CA bundle as the supervisor read it.
type caBundle struct {
	// sum identifies the set of certificates: the SHA-256 of their DER,
	// sorted. Zero when the bundle could not be read.
	sum [sha256.Size]byte
	// err says why etcd must not be restarted onto this bundle: it does
	// not parse, or does not trust this member's own certificates (which
	// the same CA as every other member's signs, so etcd would refuse
	// its peers).
	err error
}

// readCABundle reads the bundle in dir and checks it against the member's
// own server and client certificates there. The kubelet swaps a
// projected volume's files together (its ..data symlink), but two reads
// may straddle a swap: a mismatch then lasts until the next poll.
func readCABundle(dir string) caBundle {
	var b caBundle
	raw, err := os.ReadFile(filepath.Join(dir, contract.TLSFileCA))
	if err != nil {
		b.err = fmt.Errorf("read CA bundle: %w", err)
		return b
	}
	pool, err := pki.Pool(raw)
	if err != nil {
		b.err = err
		return b
	}
	b.sum = bundleSum(raw)
	for _, pair := range [][2]string{
		{contract.TLSFileServerCert, contract.TLSFileServerKey},
		{contract.TLSFileClientCert, contract.TLSFileClientKey},
	} {
		if err := trusts(pool, filepath.Join(dir, pair[0]), filepath.Join(dir, pair[1])); err != nil {
			b.err = err
			return b
		}
	}
	return b
}

// bundleSum is the SHA-256 of the sorted DER of the certificates of a
// bundle pki.Pool accepted.
func bundleSum(raw []byte) [sha256.Size]byte {
	var ders [][]byte
	for rest := raw; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		ders = append(ders, block.Bytes)
	}
	slices.SortFunc(ders, bytes.Compare)
	ders = slices.CompactFunc(ders, bytes.Equal)
	h := sha256.New()
	for _, d := range ders {
		h.Write(d)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// trusts fails unless the pair's certificate verifies against pool.
func trusts(pool *x509.CertPool, certFile, keyFile string) error {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("this member's certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("this member's certificate: %w", err)
	}
	opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("the bundle does not trust this member's certificate %s: %w", certFile, err)
	}
	return nil
}

// observeTurn looks at the cluster for decideRestart: the membership,
// and each other started member's Status, over TLS with the member's
// client certificate, every call bounded by DialTimeout.
func (e *Manager) observeTurn(ctx context.Context, bundle caBundle, ord int) turnState {
	s := turnState{Ordinal: ord, Turn: e.Turns.turn(), Probed: time.Now(), BundleErr: bundle.err}
	if s.BundleErr != nil || !inTurn(s.Probed, ord, s.Turn) {
		s.Now = time.Now()
		return s
	}
	s.Members, s.ListErr = e.memberViews(ctx)
	s.Now = time.Now()
	return s
}

// memberViews lists the members and asks each other started one for its
// status, all at once. Unlike Args (cluster), it may ask this member
// too, which runs: a cluster of one, or a bed with no other endpoint,
// still answers.
func (e *Manager) memberViews(ctx context.Context) ([]memberView, error) {
	tc, err := e.clientTLS()
	if err != nil {
		return nil, err
	}
	timeout := cmpOr(e.DialTimeout, 3*time.Second)
	eps := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(e.Endpoints), e.ClientURL(e.Name)))))
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: timeout, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := cli.MemberList(cctx)
	cancel()
	if err != nil {
		return nil, err
	}
	views := make([]memberView, len(resp.Members))
	var wg sync.WaitGroup
	for i, m := range resp.Members {
		views[i] = memberView{Name: m.Name, Learner: m.IsLearner, Started: m.Name != "" && len(m.ClientURLs) > 0,
			Self: m.Name == e.Name || slices.Contains(m.PeerURLs, e.PeerURL(e.Name))}
		if views[i].Self || !views[i].Started {
			continue
		}
		wg.Go(func() { views[i].Leader, views[i].Err = memberLeader(ctx, cli, m, timeout) })
	}
	wg.Wait()
	return views, nil
}

// memberLeader asks member m for its status: the leader it follows, 0
// for none.
func memberLeader(ctx context.Context, cli *clientv3.Client, m *etcdserverpb.Member, timeout time.Duration) (uint64, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := cli.Status(cctx, m.ClientURLs[0])
	if err != nil {
		return 0, err
	}
	// Alarms (st.Errors: NOSPACE) do not take a member out of the
	// quorum; they are the runtime's to report.
	return st.Leader, nil
}
