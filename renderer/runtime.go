package renderer

import (
	"github.com/cairn-dev/cairn/planner/contract"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runtimeReplicas: two, so a new leader takes over at once when one dies.
const runtimeReplicas = 2

// runtimeObjects renders the cluster's runtime: its ServiceAccount, a Role
// with only the verbs it uses, the binding, and the Deployment.
func runtimeObjects(n names, o Options, s Settings, rules []rbacv1.PolicyRule) []Object {
	name := contract.Runtime(n.cluster)
	meta := n.meta(name, "runtime")
	return []Object{
		{File: "runtime-serviceaccount.yaml", Obj: &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta}},
		{File: "runtime-role.yaml", Obj: &rbacv1.Role{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta, Rules: rules}},
		{File: "runtime-rolebinding.yaml", Obj: &rbacv1.RoleBinding{
			TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name}},
		}},
		{File: "runtime-deployment.yaml", Obj: hardenRuntime(runtimeDeployment(n, o, meta), s)},
	}
}

// runtimeDeployment runs `cairn runtime` as the cluster's ServiceAccount
// of the same name, two replicas spread over nodes.
func runtimeDeployment(n names, o Options, meta metav1.ObjectMeta) *appsv1.Deployment {
	labels := contract.Selector(contract.AppRuntime, n.cluster)
	return &appsv1.Deployment{
		TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(runtimeReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: meta.Name,
					Containers: []corev1.Container{{
						Name:    contract.RuntimeContainer,
						Image:   o.CairnImage,
						Command: []string{"/cairn", "runtime", "--kind", n.kind, "--cluster", n.cluster},
						Env: []corev1.EnvVar{
							envFrom(contract.EnvPodName, "metadata.name"),
							envFrom(contract.EnvPodNamespace, "metadata.namespace"),
						},
						EnvFrom:         backupCredentials(n),
						Ports:           []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}},
						SecurityContext: restricted(),
					}},
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Affinity: spreadRuntime(labels),
				},
			},
		},
	}
}

// hardenRuntime gives the runtime's container a read-only root
// filesystem, with contract.RuntimeTmpDir as a bounded emptyDir, and a
// memory request and limit, when s asks for them (a create step, or the
// runtime-read-only-root or runtime-memory-limit step); without, the
// Deployment stays as cairn rendered it before, so the runtime's pods
// are not replaced outside a step. The runtime writes nothing to its
// filesystem (docs/security.md): backups stream from the member to the
// store, certificates live in Secrets and memory, its token is only
// read.
func hardenRuntime(d *appsv1.Deployment, s Settings) *appsv1.Deployment {
	if !s.RuntimeNoMemoryLimit {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(contract.RuntimeMemoryRequest)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(contract.RuntimeMemoryLimit)},
		}
		// Go's heap is collected before it reaches the container's limit.
		c.Env = append(c.Env, corev1.EnvVar{Name: contract.EnvGoMemoryLimit, Value: contract.RuntimeGoMemoryLimit})
	}
	if !s.RuntimeReadOnlyRoot {
		return d
	}
	spec := &d.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: runtimeTmpVolume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse(contract.RuntimeTmpSizeLimit))}}})
	c := &spec.Containers[0]
	c.SecurityContext.ReadOnlyRootFilesystem = ptr(true)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: runtimeTmpVolume, MountPath: contract.RuntimeTmpDir})
	return d
}

// runtimeTmpVolume is the volume of the runtime's /tmp.
const runtimeTmpVolume = "tmp"

// commonRuntimeRules are what every runtime uses: its leader Lease.
func commonRuntimeRules(n names) []rbacv1.PolicyRule {
	lease := contract.Runtime(n.cluster)
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{lease}, Verbs: []string{"get", "update"}},
	}
}

// etcdRuntimeRules add what an etcd runtime uses and nothing more:
// reading the StatefulSet, a learner's pod before promoting it, deleting
// the members' pods for a merged recovery step and labelling them leader
// or follower (the drain budgets; the admission policy lets a patch set
// that label only) (the members' pods, by name), the members' volume claims (by name: a
// replaced claim is a member to replace) and the rendered config (a merged step's remove request, the backup
// policy); listing the pods (a ready member to back up from); keeping its
// status ConfigMap (backups patch their own key); recording Events; with
// TLS on, keeping the cluster's certificate Secrets, or with a
// cert-manager issuer only reading root's (certificateRules).
func etcdRuntimeRules(n names, s Settings) []rbacv1.PolicyRule {
	status := contract.StatusConfigMap(n.cluster)
	return append(append(commonRuntimeRules(n), certificateRules(n, s)...),
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, ResourceNames: []string{n.cluster}, Verbs: []string{"get"}},
		// delete: a merged recovery step restarts the members; patch:
		// their role labels.
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: contract.MemberNames(n.cluster), Verbs: []string{"get", "delete", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, ResourceNames: memberClaims(n), Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{contract.ConfigMap(n.cluster)}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{status}, Verbs: []string{"get", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	)
}

// certificateRules let a runtime keep the cluster's CA and certificate
// Secrets when TLS is on: creating a Secret cannot be narrowed by name,
// reading and renewing them is; with a cert-manager issuer, it only
// reads the client certificate (the superuser's, etcd's root), which is
// all either kind's runtime needs to reach the members.
func certificateRules(n names, s Settings) []rbacv1.PolicyRule {
	switch {
	case contract.TLSOn(s.TLS) && s.TLSIssuer != nil:
		return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{contract.ClientTLSSecret(n.cluster)}, Verbs: []string{"get"}}}
	case contract.TLSOn(s.TLS):
		return []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{
				contract.CASecret(n.cluster), contract.ServerTLSSecret(n.cluster), contract.ClientTLSSecret(n.cluster)}, Verbs: []string{"get", "update"}},
		}
	}
	return nil
}

// postgresRuntimeRules add what a PostgreSQL runtime uses: listing the
// pods and labelling the members' (by name: no other pod), reading the superuser Secret to ask each member its
// role and the replication Secret to take base backups, the StatefulSet
// (its Events' object) and the rendered config (synchronous standbys, a
// merged step's switchover request, the backup policy); keeping its
// status ConfigMap (backups patch their own key); recording Events. With
// TLS on, it keeps the cluster's CA and certificate Secrets: creating a
// Secret cannot be narrowed by name, reading and renewing them is; with a
// cert-manager issuer, it only reads the superuser's certificate.
func postgresRuntimeRules(n names, s Settings) []rbacv1.PolicyRule {
	status := contract.StatusConfigMap(n.cluster)
	return append(append(commonRuntimeRules(n), certificateRules(n, s)...),
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, ResourceNames: []string{n.cluster}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: contract.MemberNames(n.cluster), Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{contract.SuperuserSecret(n.cluster), contract.ReplicationSecret(n.cluster)}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{contract.ConfigMap(n.cluster)}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{status}, Verbs: []string{"get", "update", "patch"}},
		// The members' clean stops: the runtime creates the ConfigMap and reads it.
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{contract.StopsConfigMap(n.cluster)}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	)
}

// nodeReaderObjects let a runtime get nodes, and nothing else of them:
// whether a member's node is cordoned (a drain begins so), so that a
// PostgreSQL runtime switches over before the primary is evicted and an
// etcd runtime moves leadership off the leader first (docs/runtime.md,
// "Drains"). Nodes are cluster-scoped: a ClusterRole and its binding,
// named after the namespace and the cluster. A spec without a namespace
// (left to Argo CD or Flux) gets none: the binding must name the
// ServiceAccount's namespace, and a name without one could be another
// cluster's. Its runtime then cannot see cordons and says so.
func nodeReaderObjects(n names) []Object {
	if n.namespace == "" {
		return nil
	}
	name := contract.RuntimeNodeReader(n.namespace, n.cluster)
	meta := n.meta(name, "runtime")
	return []Object{
		{File: "runtime-nodes-clusterrole.yaml", Obj: &rbacv1.ClusterRole{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta,
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}}},
		{File: "runtime-nodes-clusterrolebinding.yaml", Obj: &rbacv1.ClusterRoleBinding{
			TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: contract.Runtime(n.cluster), Namespace: n.namespace}},
		}},
	}
}

// backupCredentials are the S3 Settings backups and restores read from
// the environment (docs/backups.md): the Secret <cluster>-backup, when a
// person created one.
func backupCredentials(n names) []corev1.EnvFromSource {
	return []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: contract.BackupSecret(n.cluster)}, Optional: ptr(true),
	}}}
}

func spreadRuntime(labels map[string]string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
				TopologyKey:   "kubernetes.io/hostname",
			},
		}},
	}}
}

// memberClaims are the data claims of every member the cluster may have.
func memberClaims(n names) []string {
	out := contract.MemberNames(n.cluster)
	for i, m := range out {
		out[i] = contract.DataClaim(m)
	}
	return out
}
