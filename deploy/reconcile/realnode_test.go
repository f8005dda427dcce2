package reconcile

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// The in-cluster install's namespaces and secrets in the test.
const (
	cairnNS, databasesNS = "cairn", "databases"
	gitToken, hookSecret = "git-t0ken", "hook-s3cret"
)

// installTree is examples/install, deploy/reconcile and deploy/admission
// as files of a kustomize tree, at their paths in the repository, with an
// overlay at
// test/ that sets what a person sets in examples/install's patch: --repo
// and --github, and --github-api for the GitHub test server, both on the
// machine over http:// (--insecure-http: the node reaches them at an
// address of the test's network, not loopback).
func installTree(t *testing.T, repo, github, api string) renderer.Tree {
	t.Helper()
	tree := renderer.Tree{}
	for _, dir := range []string{"deploy/reconcile", "deploy/admission", "examples/install"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tree[dir+"/"+filepath.Base(f)] = data
		}
	}
	args := "/spec/template/spec/containers/0/args"
	tree["test/kustomization.yaml"] = fmt.Appendf(nil, `resources:
- ../examples/install
patches:
- target: {kind: Deployment, name: cairn-reconcile}
  patch: |-
    - {op: test, path: %[1]s/1, value: "--repo=https://github.com/OWNER/gitops.git"}
    - {op: replace, path: %[1]s/1, value: "--repo=%[2]s"}
    - {op: test, path: %[1]s/2, value: "--github=OWNER/gitops"}
    - {op: replace, path: %[1]s/2, value: "--github=%[3]s"}
    - {op: add, path: %[1]s/-, value: "--github-api=%[4]s"}
    - {op: add, path: %[1]s/-, value: "--insecure-http"}
`, args, repo, github, api)
	return tree
}

// TestRealNodeReconcileInCluster runs cairn reconcile as
// examples/install installs it, and then as charts/cairn does (its
// `helm template` output applied), one after the other on one real
// node: three replicas from the cairn image under the restricted
// standard, reading their tokens from the Secret, reaching the test's
// git server and GitHub test server (on the machine, through
// kubenode.Expose), Ready through their probes; a spec pushed and
// GitHub's push webhook through the webhook Service open the create
// step's pull request, published by one replica; the replicas share the
// shards, and a replica stopped releases its own; and nothing they do is
// forbidden. Between the two, the first install's namespace is deleted.
func TestRealNodeReconcileInCluster(t *testing.T) {
	node := kubenode.Start(t, "cairn")
	admin := node.Client(t)
	// The README's `kubectl create namespace databases`: the install
	// reads it, never owns it.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: databasesNS}}
	if _, err := admin.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		install func(t *testing.T, node *kubenode.Cluster, repo, api, ghToken string)
	}{
		{"examples/install", install},
		{"charts/cairn", installChart},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			gitURL, bare := gitServer(t)
			gh := githubtest.New(t)
			gh.UseRepo(bare)
			c.install(t, node, node.Expose(t, gitURL), node.Expose(t, gh.URL)+"/", gh.Token)
			defer uninstall(t, admin)

			pods := waitReady(t, admin, 3, 4*time.Minute, node)
			ready := time.Since(start)
			for _, p := range pods {
				for _, path := range []string{"/healthz", "/readyz"} {
					if code, body := get(t, "http://"+p.Status.PodIP+":9090"+path); code != http.StatusOK {
						t.Errorf("%s %s: %d %s", p.Name, path, code, body)
					}
				}
			}
			sharesShards(t, admin, pods)
			opened := aPushOpensTheCreateStep(t, node, gh, bare, pods)
			moved := aReplicaStops(t, admin, pods[0].Name, node)
			t.Logf("3 replicas Ready %.1fs after the install's start (the first's includes the node's); spec push + webhook to the create pull request: %.1fs; a replica's pod deleted to its shards held by the others: %.1fs; wall time %.1fs",
				ready.Seconds(), opened.Seconds(), moved.Seconds(), time.Since(start).Seconds())
		})
	}
}

// installChart makes the namespace cairn (enforcing the restricted
// standard, as charts/cairn's notes say) and applies the chart's
// objects, rendered with --repo, --github and --github-api set as
// install sets them, then makes the Secret.
func installChart(t *testing.T, node *kubenode.Cluster, repo, api, ghToken string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cairnNS, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := node.Client(t).CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stream, err := helmTemplate(t, cairnNS, "--set", "repo="+repo, "--set", "github=org/gitops", "--set", "githubAPI="+api,
		"--set", "extraArgs={--insecure-http}")
	if err != nil {
		t.Fatal(err)
	}
	if err := node.ServerSideApply(t, "", stream, false); err != nil {
		t.Fatal(err)
	}
	makeSecret(t, node, ghToken)
}

// uninstall deletes what an install made in the cluster but the
// admission policy (the test bed's own): namespace cairn, once gone, and
// the observe Role and binding in the clusters' namespace.
func uninstall(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	if err := c.CoreV1().Namespaces().Delete(ctx, cairnNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = c.RbacV1().RoleBindings(databasesNS).Delete(ctx, "cairn-reconcile-observe", metav1.DeleteOptions{})
	_ = c.RbacV1().Roles(databasesNS).Delete(ctx, "cairn-reconcile-observe", metav1.DeleteOptions{})
	testbed.EventuallyWithin(t, 3*time.Minute, "namespace cairn deleted", func() error {
		if _, err := c.CoreV1().Namespaces().Get(ctx, cairnNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s: %v", cairnNS, err)
		}
		return nil
	})
}

// gitServer starts a git server over HTTP on loopback holding org/gitops
// with an empty specs folder (without it every pass fails, a wrong --repo
// or --specs, and no replica gets Ready). It returns the repo's URL
// and the repo's bare folder.
func gitServer(t *testing.T) (url, bare string) {
	t.Helper()
	return gitbed.Serve(t, "x-access-token", gitToken, map[string]string{"clusters/README.md": "the fleet's specs\n"})
}

// install applies examples/install with the test's --repo, --github and
// --github-api, then makes the Secret, as its comment allows: the pods
// wait for it.
func install(t *testing.T, node *kubenode.Cluster, repo, api, ghToken string) {
	t.Helper()
	stream, err := renderer.Build(installTree(t, repo, "org/gitops", api), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := node.ServerSideApply(t, "", stream, false); err != nil {
		t.Fatal(err)
	}
	makeSecret(t, node, ghToken)
}

// makeSecret makes the Secret cairn-reconcile the pods read their tokens
// from.
func makeSecret(t *testing.T, node *kubenode.Cluster, ghToken string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cairn-reconcile", Namespace: cairnNS},
		Data: map[string][]byte{"git-token": []byte(gitToken + "\n"), "github-token": []byte(ghToken + "\n"), "webhook-secret": []byte(hookSecret)}}
	if _, err := node.Client(t).CoreV1().Secrets(cairnNS).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// aPushOpensTheCreateStep pushes the README's spec and sends GitHub's
// push webhook to the webhook Service: the replica it reaches passes and
// has the others pass (cairn-trigger), and the one holding the cluster's
// shard, alone, opens the create step's pull request; no replica's log
// says forbidden. It returns the time from the push to the pull request.
func aPushOpensTheCreateStep(t *testing.T, node *kubenode.Cluster, gh *githubtest.Server, bare string, pods []corev1.Pod) time.Duration {
	t.Helper()
	gitbed.Commit(t, bare, map[string]string{"clusters/my-etcd-cluster.yaml": `apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdCluster"
metadata:
  name: "my-etcd-cluster"
spec:
  size: 3
  version: "3.7.3"
`})
	pushed := time.Now()
	svc, err := node.Client(t).CoreV1().Services(cairnNS).Get(context.Background(), "cairn-reconcile-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if code := pushHook(t, "http://"+svc.Spec.ClusterIP+":80/"); code != http.StatusAccepted {
		t.Fatalf("the push webhook through the Service: %d, want 202", code)
	}
	var opened time.Duration
	testbed.EventuallyWithin(t, 2*time.Minute, "the create step's pull request", func() error {
		for _, pr := range gh.Open() {
			if pr.Head.Ref == "cairn/my-etcd-cluster/create" {
				opened = time.Since(pushed)
				return nil
			}
		}
		return fmt.Errorf("open pull requests: %d", len(gh.Open()))
	})
	// The replicas passed first as they started, before they were Ready
	// (up to 10 s before, the readiness probe's period); the next pass
	// on the interval (1m) is at least 45 s after the push.
	if opened > 30*time.Second {
		t.Errorf("the pull request opened %s after the push: the interval's pass, not the webhook's", opened)
	}
	for name, l := range ownerPrinted(t, node, pods) {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			t.Errorf("%s's log has forbidden in it:\n%s", name, l)
		}
	}
	if n := len(gh.Open()); n != 1 {
		t.Errorf("%d open pull requests, want the create step's alone", n)
	}
	return opened
}

// ownerPrinted waits until one replica alone has printed the pull
// request opened, its pass's last act, and returns every replica's log,
// then complete up to that pass.
func ownerPrinted(t *testing.T, node *kubenode.Cluster, pods []corev1.Pod) map[string]string {
	t.Helper()
	logs := map[string]string{}
	testbed.EventuallyWithin(t, time.Minute, "the pass's line in the owner's log", func() error {
		var owners []string
		for _, p := range pods {
			l, err := node.PodLogs(cairnNS, p.Name)
			if err != nil {
				return err
			}
			logs[p.Name] = l
			if printed(l, "EtcdCluster/my-etcd-cluster", "create", "opened") {
				owners = append(owners, p.Name)
			}
		}
		if len(owners) != 1 {
			return fmt.Errorf("replicas that printed the pull request opened: %v", owners)
		}
		return nil
	})
	return logs
}

// waitReady waits until n pods of cairn reconcile are Ready, none
// restarted, and returns them.
func waitReady(t *testing.T, c kubernetes.Interface, n int, within time.Duration, node *kubenode.Cluster) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	testbed.EventuallyWithin(t, within, fmt.Sprintf("%d ready replicas", n), func() error {
		l, err := c.CoreV1().Pods(cairnNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cairn-reconcile"})
		if err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		var ready int
		for _, p := range pods {
			for _, s := range p.Status.ContainerStatuses {
				if s.RestartCount > 0 {
					logs, err := node.PodLogs(cairnNS, p.Name)
					t.Fatalf("%s restarted %d times; its containers' logs (%v):\n%s", p.Name, s.RestartCount, err, logs)
				}
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if len(pods) != n || ready != n {
			return fmt.Errorf("%d pods, %d ready", len(pods), ready)
		}
		return nil
	})
	return pods
}

// sharesShards checks that the shard Leases are spread over the
// replicas: each holds its fair share (docs/sharding.md: 32/n, or one
// more), and every shard is held.
func sharesShards(t *testing.T, c kubernetes.Interface, pods []corev1.Pod) {
	t.Helper()
	testbed.EventuallyWithin(t, time.Minute, "the shards shared by the replicas", func() error {
		held, err := shardHolders(c)
		if err != nil {
			return err
		}
		total, fair := 0, 32/len(pods)
		for _, p := range pods {
			if n := held[p.Name]; n != fair && n != fair+1 {
				return fmt.Errorf("%s holds %d shards, not its fair share (%d or %d): %v", p.Name, n, fair, fair+1, held)
			}
			total += held[p.Name]
		}
		if total != 32 {
			return fmt.Errorf("%d of 32 shards held by the replicas: %v", total, held)
		}
		t.Logf("shards held: %v", held)
		return nil
	})
}

// shardHolders counts the shard Leases each pod holds. A holder is the
// pod's name and an incarnation: <pod>_<hex>.
func shardHolders(c kubernetes.Interface) (map[string]int, error) {
	l, err := c.CoordinationV1().Leases(cairnNS).List(context.Background(), metav1.ListOptions{LabelSelector: "cairn.dev/lease=shard"})
	if err != nil {
		return nil, err
	}
	held := map[string]int{}
	for _, lease := range l.Items {
		if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
			pod, _, _ := strings.Cut(*h, "_")
			held[pod]++
		}
	}
	return held, nil
}

// aReplicaStops deletes a replica's pod, as a rolling update or a drain
// does: on SIGTERM it releases its shards, and the others take them
// before its Leases could have expired (--lease-duration=30s); the
// Deployment's new replica gets Ready and a share. It returns how long
// the shards took to move.
func aReplicaStops(t *testing.T, c kubernetes.Interface, pod string, node *kubenode.Cluster) time.Duration {
	t.Helper()
	deleted := time.Now()
	if err := c.CoreV1().Pods(cairnNS).Delete(context.Background(), pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var moved time.Duration
	testbed.EventuallyWithin(t, 20*time.Second, "the stopped replica's shards taken by the others", func() error {
		held, err := shardHolders(c)
		if err != nil {
			return err
		}
		total := 0
		for _, n := range held {
			total += n
		}
		if held[pod] > 0 || total != 32 {
			return fmt.Errorf("%d of 32 shards held: %v", total, held)
		}
		moved = time.Since(deleted)
		return nil
	})
	sharesShards(t, c, waitReady(t, c, 3, 2*time.Minute, node))
	return moved
}

// printed reports whether a line of cairn reconcile's standard output
// (what each pass changed) in a container log has every word.
func printed(log string, words ...string) bool {
	for line := range strings.Lines(log) {
		_, out, ok := strings.Cut(line, " stdout F ")
		if !ok {
			continue
		}
		all := true
		for _, w := range words {
			all = all && slices.Contains(strings.Fields(out), w)
		}
		if all {
			return true
		}
	}
	return false
}

// pushHook sends GitHub's push webhook for main, signed with the secret.
func pushHook(t *testing.T, url string) int {
	t.Helper()
	body := []byte(`{"ref":"refs/heads/main"}`)
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-000000000001")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("push webhook: %v", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// get is an HTTP GET's status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body)
}
