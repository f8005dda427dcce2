// Package reconcile holds no code: it is where cairn reconcile's install
// manifests live, sharded over three replicas (docs/sharding.md), and its
// tests check them.
//
//	kustomization.yaml   the manifests below, in namespace cairn
//	serviceaccount.yaml  the replicas' ServiceAccount
//	rbac.yaml            two Roles and their bindings: the Leases, and what planner/observe reads
//	deployment.yaml      three replicas of cairn reconcile --shards, restricted, read-only root
//	service.yaml         the Service GitHub's webhooks reach
//	pdb.yaml             one replica evicted at a time
//
// The tests build the kustomization with kustomize, decode every object
// strictly, hold the Deployment to the rules (restricted security
// context, probes on the --metrics-addr port, POD_NAME from the downward
// API, every flag one cairn reconcile has), apply it all on a real
// kube-apiserver, admit its pod under the restricted Pod Security
// standard, and run a shard member and the observer with a token of the
// ServiceAccount: the Roles let them do their work and nothing more.
// examples/install is this kustomization with what a person adds (the
// Namespace, the observer's Role in the clusters' namespace, the flags)
// and deploy/admission's policy; its test holds it to that. charts/cairn
// is the same objects as a Helm chart: chart_test.go renders it with
// `helm template` (.cache/bin/helm, `make chart`) and holds every object
// field for field to `kustomize build examples/install`, refuses bad
// values through its schema, and dry-runs it on a real kube-apiserver.
// TestRealNodeReconcileInCluster runs both installs on a real node
// (testbed/kubenode) against a git server and the GitHub test server.
// Nothing imports it.
package reconcile
