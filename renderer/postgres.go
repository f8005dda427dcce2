package renderer

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
)

// PostgreSQL paths and ports.
const (
	pgPort      = 5432
	pgDataMount = "/var/lib/postgresql/data"
	pgData      = pgDataMount + "/pgdata"
	pgConfDir   = contract.PostgresConfigDir
	pgUID       = 999 // the postgres user of the official images
)

// postgresObjects renders a PostgreSQL cluster at Settings s.
func postgresObjects(c *spec.PostgresCluster, s Settings, o Options, initial int) ([]Object, error) {
	n := namesOf(c, contract.AppPostgres)
	image, err := o.PostgresImage(s.Version)
	if err != nil {
		return nil, err
	}
	sts, err := postgresStatefulSet(n, s, image, o)
	if err != nil {
		return nil, err
	}
	objs := []Object{
		keepImages(readOnlyRoot(sts, s, tmpDir, pgSocketDir), s.Images),
		pgService(n, contract.PrimaryService(n.cluster), "service-rw.yaml", map[string]string{contract.LabelRole: contract.RolePrimary}, false),
		pgService(n, contract.ReplicaService(n.cluster), "service-ro.yaml", map[string]string{contract.LabelRole: contract.RoleReplica}, false),
		pgService(n, contract.ReadService(n.cluster), "service-r.yaml", nil, false),
		pgService(n, contract.HeadlessService(n.cluster), "service-headless.yaml", nil, true),
		postgresConfig(n, s),
		cairnConfig(n, s, "", initial, pgConfigKeys(s)),
	}
	objs = append(objs, postgresDisruptionBudgets(n, s.Replicas)...)
	objs = append(objs, grownVolumes(n, s)...)
	if contract.TLSOn(s.TLS) && s.TLSIssuer != nil {
		objs = append(objs, postgresCertificates(n, *s.TLSIssuer)...)
	}
	objs = append(objs, memberObjects(n, s.TLS)...)
	if u := s.UpgradeCheck; u != nil {
		job, err := pgUpgradeCheckJob(n, *u, o)
		if err != nil {
			return nil, err
		}
		objs = append(objs, job)
	}
	if networkRestricted(s) {
		objs = append(objs, networkPolicy(n, peerAccess{
			from:  []networkingv1.NetworkPolicyPeer{membersPeer(n), runtimePeer(n), clientsPeer(n)},
			ports: []int32{pgPort},
		}))
	}
	objs = append(objs, nodeReaderObjects(n)...)
	return append(objs, runtimeObjects(n, o, s, postgresRuntimeRules(n, s))...), nil
}

// postgresCertificates are the cluster's cert-manager Certificates
// (certificateObjects): a server certificate and the superuser's.
func postgresCertificates(n names, issuer contract.IssuerRef) []Object {
	return certificateObjects(n, issuer, certificateSpec{
		DNSNames: contract.PostgresServerNames(n.cluster, n.namespace),
		Usages:   []string{"server auth", "digital signature"},
	}, certificateSpec{
		CommonName: contract.PostgresSuperuser,
		Usages:     []string{"client auth", "digital signature"},
	})
}

// pgService selects the cluster's pods, narrowed by the runtime's role
// label for -rw (the primary) and -ro (replicas).
func pgService(n names, name, file string, role map[string]string, headless bool) Object {
	sel := n.selector()
	for k, v := range role {
		sel[k] = v
	}
	svc := corev1.ServiceSpec{
		Selector: sel,
		Ports:    []corev1.ServicePort{{Name: "postgres", Port: pgPort, TargetPort: intstr.FromString("postgres")}},
	}
	if headless {
		svc.ClusterIP, svc.PublishNotReadyAddresses = "None", true
	}
	return Object{File: file, Obj: &corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: n.meta(name, "database"), Spec: svc}}
}

// postgresConfig is the ConfigMap <cluster>-config: postgresql.conf with
// the Settings streaming replication needs and the spec's parameters, and
// pg_hba.conf. Settings the runtime changes (synchronous_standby_names,
// primary_conninfo) live in postgresql.auto.conf, never here.
func postgresConfig(n names, s Settings) Object {
	var conf strings.Builder
	conf.WriteString("# Rendered by cairn from the PostgresCluster spec; do not edit here.\n")
	for _, kv := range [][2]string{
		{"listen_addresses", "'*'"}, {"port", fmt.Sprint(pgPort)},
		{"hba_file", "'" + pgConfDir + "/pg_hba.conf'"},
		{"password_encryption", "'scram-sha-256'"},
		{"wal_level", "replica"}, {"hot_standby", "on"}, {"wal_log_hints", "on"},
		{"max_wal_senders", "16"}, {"max_replication_slots", "16"},
		// A former primary keeps the WAL pg_rewind reads to bring it back.
		{"wal_keep_size", "'512MB'"},
		// A standby replies at least every second, so a primary that
		// cannot reach the API server counts it as following well within
		// its lease (runtime/instance/postgres/failsafe.go).
		{"wal_receiver_status_interval", "1"},
	} {
		fmt.Fprintf(&conf, "%s = %s\n", kv[0], kv[1])
	}
	// cairn's own settings come before the spec's parameters, which the
	// observer reads back from the header on.
	if contract.TLSOn(s.TLS) {
		writeTLSSettings(&conf)
	}
	if len(s.Parameters) > 0 {
		conf.WriteString(contract.PostgresParametersHeader + "\n")
		// Names were checked by the spec and values quoted
		// (spec.ParamValue.Quoted): every value stays inside its quotes
		// and on its line.
		for _, k := range slices.Sorted(maps.Keys(s.Parameters)) {
			fmt.Fprintf(&conf, "%s = %s\n", k, s.Parameters[k])
		}
	}
	if s.ConfigRevision != "" {
		fmt.Fprintf(&conf, "%s = '%s'\n", contract.ConfigRevisionParameter, s.ConfigRevision)
	}
	hba := pgHBA(s.TLS)
	return Object{File: "postgres-config.yaml", Obj: &corev1.ConfigMap{
		TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: n.meta(contract.PostgresConfig(n.cluster), "config"),
		Data: map[string]string{contract.PostgresConfFile: conf.String(), contract.PostgresHBAFile: hba},
	}}
}

// writeTLSSettings has the server serve TLS with the certificates the
// instance manager writes from the runtime's Secrets (PostgreSQL loads
// them again at a reload, so a renewed certificate needs no restart),
// and check client certificates against the cluster's CA.
func writeTLSSettings(conf *strings.Builder) {
	file := func(name string) string { return "'" + contract.PostgresTLSDir + "/" + name + "'" }
	for _, kv := range [][2]string{
		{"ssl", "on"},
		{"ssl_cert_file", file(contract.TLSFileServerCert)},
		{"ssl_key_file", file(contract.TLSFileServerKey)},
		{"ssl_ca_file", file(contract.TLSFileCA)},
		{"ssl_min_protocol_version", "'TLSv1.2'"},
	} {
		fmt.Fprintf(conf, "%s = %s\n", kv[0], kv[1])
	}
}

// pgHBA is pg_hba.conf for a TLS mode. Off: SCRAM passwords from any
// address. Accept: the superuser over TLS only by its client certificate
// (cert: the certificate's CN must be postgres, signed by the cluster's
// CA), everything else as before. Require: nothing but TLS from the
// network; the superuser by certificate alone, replication and every
// other user by SCRAM over TLS. The local socket admits the superuser by
// peer (the server's own OS user) in every mode.
func pgHBA(tls string) string {
	var b strings.Builder
	b.WriteString("# Rendered by cairn; do not edit here.\n")
	line := func(typ, db, user, addr, method string) {
		fmt.Fprintf(&b, "%-8s%-13s%-12s%-13s%s\n", typ, db, user, addr, method)
	}
	line("local", "all", "postgres", "", "peer")
	line("local", "all", "all", "", "scram-sha-256")
	nets := []string{"0.0.0.0/0", "::/0"}
	if contract.TLSOn(tls) {
		for _, a := range nets {
			line("hostssl", "all", "postgres", a, "cert")
		}
	}
	typ := "host"
	if tls == contract.TLSRequire {
		typ = "hostssl"
	}
	for _, db := range []string{"replication", "all"} {
		user := "all"
		if db == "replication" {
			user = contract.PostgresReplicationUser
		}
		for _, a := range nets {
			line(typ, db, user, a, "scram-sha-256")
		}
	}
	return b.String()
}

// postgresEnv is the database container's environment: the passwords
// only as references to the Secrets.
func postgresEnv(n names) []corev1.EnvVar {
	return append(podEnv(n),
		corev1.EnvVar{Name: contract.EnvPGData, Value: pgData},
		corev1.EnvVar{Name: "PGPORT", Value: fmt.Sprint(pgPort)},
		envSecret(contract.EnvSuperuserPassword, contract.SuperuserSecret(n.cluster), contract.SecretKeyPassword),
		envSecret(contract.EnvReplicationPassword, contract.ReplicationSecret(n.cluster), contract.SecretKeyPassword),
	)
}

// pgSocketDir is where the official images' PostgreSQL puts its Unix
// socket and lock file (unix_socket_directories' default).
var pgSocketDir = writableDir{"pg-socket", "/var/run/postgresql"}

func postgresContainer(n names, image string, res corev1.ResourceRequirements, env []corev1.EnvVar) corev1.Container {
	mounts := append([]corev1.VolumeMount{
		{Name: dataVolume, MountPath: pgDataMount},
		{Name: "postgres-config", MountPath: pgConfDir, ReadOnly: true},
		{Name: "dshm", MountPath: "/dev/shm"},
	}, commonMounts()...)
	port := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("postgres")}}
	return corev1.Container{
		Name:    contract.PostgresContainer,
		Image:   image,
		Command: []string{cairnBin, "instance", "postgres", "--config", cairnConfDir, "--pg-config", pgConfDir, "--primary-service", contract.PrimaryService(n.cluster), "--peer-service", contract.HeadlessService(n.cluster)},
		Env:     env,
		// A create step from a base backup reads it from object storage.
		EnvFrom: backupCredentials(n),
		Ports:   []corev1.ContainerPort{{Name: "postgres", ContainerPort: pgPort}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-h", "127.0.0.1", "-p", fmt.Sprint(pgPort)}}},
			PeriodSeconds: 5, FailureThreshold: 3, TimeoutSeconds: 3,
		},
		StartupProbe:    startupProbe(port),
		LivenessProbe:   &corev1.Probe{ProbeHandler: port, PeriodSeconds: 10, FailureThreshold: 6, TimeoutSeconds: 5},
		Resources:       res,
		VolumeMounts:    mounts,
		SecurityContext: restricted(),
	}
}

func postgresStatefulSet(n names, s Settings, image string, o Options) (Object, error) {
	env := postgresEnv(n)
	res, err := resources(s.Resources)
	if err != nil {
		return Object{}, fmt.Errorf("resources: %w", err)
	}
	container := postgresContainer(n, image, res, env)
	volumes := append(commonVolumes(n),
		corev1.Volume{Name: "postgres-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: contract.PostgresConfig(n.cluster)}}}},
		corev1.Volume{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	)
	inits := []corev1.Container{installContainer(o)}
	if s.UpgradeFrom > 0 {
		to, err := spec.ParseRelease(s.Version, 2)
		if err != nil {
			return Object{}, err
		}
		inits = append(inits, pgUpgradeContainer(o, s.UpgradeFrom, to.Major, env))
	}
	return Object{File: "statefulset.yaml", Obj: &appsv1.StatefulSet{
		TypeMeta: typeMeta("apps/v1", "StatefulSet"), ObjectMeta: n.meta(n.cluster, "database"),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr(int32(s.Replicas)),
			ServiceName: contract.HeadlessService(n.cluster),
			Selector:    selector(n),
			// Ordered start: the first pod initialises the primary before
			// the others clone from it.
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(s.Partition))},
			},
			PersistentVolumeClaimRetentionPolicy: retainVolumes(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: podMeta(n, s),
				Spec: corev1.PodSpec{
					InitContainers:                inits,
					Containers:                    []corev1.Container{container},
					Volumes:                       volumes,
					TerminationGracePeriodSeconds: ptr(int64(60)),
					SecurityContext:               podSecurity(pgUID),
					ServiceAccountName:            memberAccount(n),
					Affinity:                      spreadMembers(n),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{templateClaim(n, s)},
		},
	}}, nil
}

func memberAccount(n names) string { return contract.MemberAccount(n.cluster) }

// memberObjects are the PostgreSQL members' ServiceAccount and what it
// may do: get the cluster's member pods (by name, no other pod), so a
// primary's instance manager confirms its own role label through the API
// server (and stops when it cannot, or is fenced); get and update the
// clean-stops ConfigMap (by name), where a primary stopped cleanly
// records its last WAL position for the runtime.
//
// With TLS on, it may also get the certificate Secrets the runtime keeps
// (by name): the server's, and the superuser's client certificate with
// which members reach each other.
func memberObjects(n names, tls string) []Object {
	name := memberAccount(n)
	meta := n.meta(name, "database")
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: contract.MemberNames(n.cluster), Verbs: []string{"get"}},
		// A primary's instance manager records its clean stop there.
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{contract.StopsConfigMap(n.cluster)}, Verbs: []string{"get", "update"}}}
	if contract.TLSOn(tls) {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{contract.ServerTLSSecret(n.cluster), contract.ClientTLSSecret(n.cluster)}, Verbs: []string{"get"}})
	}
	return []Object{
		{File: "member-serviceaccount.yaml", Obj: &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta}},
		{File: "member-role.yaml", Obj: &rbacv1.Role{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta, Rules: rules}},
		{File: "member-rolebinding.yaml", Obj: &rbacv1.RoleBinding{
			TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name}},
		}},
	}
}

// pgUpgradeContainer runs pg_upgrade when the data directory is still on
// the old major; on any other start it does nothing. It stays in the
// template after the upgrade, so removing it never restarts members.
func pgUpgradeContainer(o Options, from, to int, env []corev1.EnvVar) corev1.Container {
	return corev1.Container{
		Name:    contract.PGUpgradeInitContainer,
		Image:   o.PostgresUpgradeImage(from, to),
		Command: []string{cairnBin, "instance", "pg-upgrade", "--from", fmt.Sprint(from), "--to", fmt.Sprint(to), "--pg-config", pgConfDir},
		Env:     env,
		VolumeMounts: []corev1.VolumeMount{
			{Name: dataVolume, MountPath: pgDataMount},
			{Name: "postgres-config", MountPath: pgConfDir, ReadOnly: true},
			{Name: "cairn-bin", MountPath: cairnBinDir, ReadOnly: true},
		},
		SecurityContext: restricted(),
	}
}

// pgConfigKeys are the PostgreSQL keys of the cairn ConfigMap.
func pgConfigKeys(s Settings) map[string]string {
	keys := map[string]string{contract.KeySynchronousStandbys: strconv.Itoa(s.Sync)}
	tlsConfigKeys(keys, s)
	if s.ConfigRevision != "" {
		keys[contract.KeyConfigRevision] = s.ConfigRevision
	}
	return keys
}
