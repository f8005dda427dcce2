package renderer

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
)

// etcd ports.
const (
	etcdClientPort = 2379
	etcdPeerPort   = 2380
	etcdDataDir    = "/var/lib/etcd"
)

// etcdObjects renders an etcd cluster at Settings s.
func etcdObjects(c *spec.EtcdCluster, s Settings, o Options, token string, initial int) ([]Object, error) {
	n := namesOf(c, contract.AppEtcd)
	image, err := o.EtcdImage(s.Version)
	if err != nil {
		return nil, err
	}
	res, err := resources(s.Resources)
	if err != nil {
		return nil, fmt.Errorf("resources: %w", err)
	}
	objs := []Object{
		etcdPeerService(n),
		etcdClientService(n),
		keepImages(readOnlyRoot(etcdStatefulSet(n, s, image, res, o), s, tmpDir), s.Images),
		cairnConfig(n, s, token, initial, etcdConfigKeys(s)),
	}
	objs = append(objs, etcdDisruptionBudgets(n, s.Replicas)...)
	objs = append(objs, grownVolumes(n, s)...)
	if contract.TLSOn(s.TLS) && s.TLSIssuer != nil {
		objs = append(objs, etcdCertificates(n, *s.TLSIssuer)...)
	}
	if networkRestricted(s) {
		// Peers reach each other on both ports; the runtime and clients
		// reach the client port only.
		objs = append(objs, networkPolicy(n,
			peerAccess{from: []networkingv1.NetworkPolicyPeer{membersPeer(n)}, ports: []int32{etcdClientPort, etcdPeerPort}},
			peerAccess{from: []networkingv1.NetworkPolicyPeer{runtimePeer(n), clientsPeer(n)}, ports: []int32{etcdClientPort}}))
	}
	objs = append(objs, nodeReaderObjects(n)...)
	return append(objs, runtimeObjects(n, o, s, etcdRuntimeRules(n, s))...), nil
}

// etcdCertificates are the cluster's cert-manager Certificates
// (certificateObjects), as the runtime's own CA issues them
// (runtime/certs): a peer certificate, which the members serve and present
// to each other (server and client authentication), with the common name
// etcd admits peers by (--peer-cert-allowed-cn), and root's.
func etcdCertificates(n names, issuer contract.IssuerRef) []Object {
	return certificateObjects(n, issuer, certificateSpec{
		CommonName: contract.EtcdPeerCommonName(n.cluster),
		DNSNames:   contract.EtcdServerNames(n.cluster, n.namespace),
		Usages:     []string{"server auth", "client auth", "digital signature"},
	}, certificateSpec{
		CommonName: contract.EtcdClientCommonName,
		Usages:     []string{"client auth", "digital signature"},
	})
}

// etcdPeerService is the headless Service that gives every member a
// stable DNS name, <pod>.<cluster>, including before it is ready (a
// joining member must be reachable to catch up).
func etcdPeerService(n names) Object {
	return Object{File: "service-peer.yaml", Obj: &corev1.Service{
		TypeMeta: typeMeta("v1", "Service"), ObjectMeta: n.meta(n.cluster, "database"),
		Spec: corev1.ServiceSpec{
			ClusterIP:                "None",
			PublishNotReadyAddresses: true,
			Selector:                 n.selector(),
			Ports: []corev1.ServicePort{
				{Name: "client", Port: etcdClientPort, TargetPort: intstr.FromString("client")},
				{Name: "peer", Port: etcdPeerPort, TargetPort: intstr.FromString("peer")},
			},
		},
	}}
}

func etcdClientService(n names) Object {
	return Object{File: "service-client.yaml", Obj: &corev1.Service{
		TypeMeta: typeMeta("v1", "Service"), ObjectMeta: n.meta(contract.EtcdClientService(n.cluster), "database"),
		Spec: corev1.ServiceSpec{
			Selector: n.selector(),
			Ports:    []corev1.ServicePort{{Name: "client", Port: etcdClientPort, TargetPort: intstr.FromString("client")}},
		},
	}}
}

func etcdStatefulSet(n names, s Settings, image string, res corev1.ResourceRequirements, o Options) Object {
	// /health answers false without a leader: fine for readiness, but
	// liveness must not restart members while quorum is being restored.
	// With TLS on, the client port asks every client for a certificate,
	// which the kubelet's probe has none of: /health is read from the
	// plain metrics port, which serves nothing else.
	health := &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("client")}
	ports := []corev1.ContainerPort{
		{Name: "client", ContainerPort: etcdClientPort},
		{Name: "peer", ContainerPort: etcdPeerPort},
	}
	mounts := append([]corev1.VolumeMount{{Name: dataVolume, MountPath: etcdDataDir}}, commonMounts()...)
	volumes := commonVolumes(n)
	if contract.TLSOn(s.TLS) {
		health.Port = intstr.FromString("metrics")
		ports = append(ports, corev1.ContainerPort{Name: "metrics", ContainerPort: contract.EtcdMetricsPort})
		mounts = append(mounts, corev1.VolumeMount{Name: tlsVolume, MountPath: contract.EtcdTLSDir, ReadOnly: true})
		volumes = append(volumes, etcdTLSVolume(n))
	}
	container := corev1.Container{
		Name:    contract.EtcdContainer,
		Image:   image,
		Command: []string{cairnBin, "instance", "etcd", "--data-dir", etcdDataDir + "/data", "--config", cairnConfDir, "--peer-service", n.cluster},
		Env:     podEnv(n),
		// A create step from a snapshot reads it from object storage.
		EnvFrom:        backupCredentials(n),
		Ports:          ports,
		Resources:      res,
		VolumeMounts:   mounts,
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: health}, PeriodSeconds: 5, FailureThreshold: 3, TimeoutSeconds: 3},
		StartupProbe:   startupProbe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("client")}}),
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("client")}},
			PeriodSeconds: 10, FailureThreshold: 6, TimeoutSeconds: 5,
		},
		SecurityContext: restricted(),
	}
	return Object{File: "statefulset.yaml", Obj: &appsv1.StatefulSet{
		TypeMeta: typeMeta("apps/v1", "StatefulSet"), ObjectMeta: n.meta(n.cluster, "database"),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr(int32(s.Replicas)),
			ServiceName: n.cluster,
			Selector:    selector(n),
			// Members of a new cluster must start together to form quorum.
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(s.Partition))},
			},
			PersistentVolumeClaimRetentionPolicy: retainVolumes(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: podMeta(n, s),
				Spec: corev1.PodSpec{
					InitContainers:                []corev1.Container{installContainer(o)},
					Containers:                    []corev1.Container{container},
					Volumes:                       volumes,
					TerminationGracePeriodSeconds: ptr(int64(30)),
					SecurityContext:               podSecurity(65532),
					AutomountServiceAccountToken:  ptr(false),
					Affinity:                      spreadMembers(n),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{templateClaim(n, s)},
		},
	}}
}

// tlsVolume holds an etcd member's certificates.
const tlsVolume = "tls"

// etcdTLSVolume projects the server and client Secrets the runtime keeps
// (or cert-manager, with the spec's issuer) into one read-only volume, as the contract.TLSFile* files. The kubelet
// waits for both Secrets before it starts the pod (a new cluster's
// members start once the runtime has issued them), and replaces the
// files when they are renewed. Keys are readable by the pod's group
// only (fsGroup), certificates by all.
func etcdTLSVolume(n names) corev1.Volume {
	item := func(key, path string, mode int32) corev1.KeyToPath {
		return corev1.KeyToPath{Key: key, Path: path, Mode: ptr(mode)}
	}
	secret := func(name string, items ...corev1.KeyToPath) corev1.VolumeProjection {
		return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}}
	}
	return corev1.Volume{Name: tlsVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o440)),
		Sources: []corev1.VolumeProjection{
			secret(contract.ServerTLSSecret(n.cluster),
				item(contract.TLSKeyCA, contract.TLSFileCA, 0o444),
				item(contract.TLSKeyCert, contract.TLSFileServerCert, 0o444),
				item(contract.TLSKeyKey, contract.TLSFileServerKey, 0o440)),
			secret(contract.ClientTLSSecret(n.cluster),
				item(contract.TLSKeyCert, contract.TLSFileClientCert, 0o444),
				item(contract.TLSKeyKey, contract.TLSFileClientKey, 0o440)),
		},
	}}}
}

// etcdConfigKeys are the etcd keys of the ConfigMap <cluster>-cairn: the
// compaction policy the runtime runs, the space quota the instance
// managers start the members with, and the TLS mode and issuer.
func etcdConfigKeys(s Settings) map[string]string {
	out := map[string]string{}
	tlsConfigKeys(out, s)
	if c := s.Compaction; c != nil {
		out[contract.KeyEtcdCompactionMode], out[contract.KeyEtcdCompactionRetention] = c.Mode, c.Retention
	}
	if s.SpaceQuota != "" {
		out[contract.KeyEtcdQuotaBackendBytes] = s.SpaceQuota
	}
	return out
}
