package renderer

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/version"
)

// Options configure where images come from, and the monitoring objects
// rendered beside each cluster.
type Options struct {
	// EtcdRepository is the etcd image repository; tags are "v<version>".
	EtcdRepository string
	// PostgresRepository is the PostgreSQL image repository; tags are the
	// version ("14.5").
	PostgresRepository string
	// PostgresUpgradeRepository holds images with two PostgreSQL majors
	// for pg_upgrade; tags are "<from>-to-<to>" ("14-to-15").
	PostgresUpgradeRepository string
	// CairnImage is the image of the cairn binary: the runtime, and the
	// instance manager copied into every database pod.
	CairnImage string
	// ImageDigests pin the images above by digest (name:tag@digest);
	// those not in it are named by tag.
	ImageDigests ImageDigests
	// PodMonitor renders the runtime's metrics Service and a Prometheus
	// Operator PodMonitor into MonitoringDir of every cluster's tree,
	// which the entry point does not include (see MonitoringDir).
	PodMonitor bool
	// MonitoringLabels are added to the labels of those objects (the
	// labels a Prometheus selects PodMonitors by); only with PodMonitor.
	MonitoringLabels map[string]string
}

// DefaultOptions are the public images.
var DefaultOptions = Options{
	EtcdRepository:            "quay.io/coreos/etcd",
	PostgresRepository:        "docker.io/library/postgres",
	PostgresUpgradeRepository: "ghcr.io/cairn-dev/postgres-upgrade", // make image (docs/images.md)
	CairnImage:                "ghcr.io/cairn-dev/cairn:" + version.Release,
}

func (o Options) withDefaults() Options {
	if o.EtcdRepository == "" {
		o.EtcdRepository = DefaultOptions.EtcdRepository
	}
	if o.PostgresRepository == "" {
		o.PostgresRepository = DefaultOptions.PostgresRepository
	}
	if o.PostgresUpgradeRepository == "" {
		o.PostgresUpgradeRepository = DefaultOptions.PostgresUpgradeRepository
	}
	if o.CairnImage == "" {
		o.CairnImage = DefaultOptions.CairnImage
	}
	o.CairnImage = o.ImageDigests.pin(o.CairnImage)
	return o
}

// EtcdImage returns the image of an etcd version cairn runs.
func (o Options) EtcdImage(version string) (string, error) {
	if _, err := spec.ParseEtcdVersion(version); err != nil {
		return "", err
	}
	o = o.withDefaults()
	return o.ImageDigests.pin(o.EtcdRepository + ":v" + version), nil
}

// PostgresImage returns the image of a PostgreSQL version cairn runs.
func (o Options) PostgresImage(version string) (string, error) {
	if _, err := spec.ParsePostgresVersion(version); err != nil {
		return "", err
	}
	o = o.withDefaults()
	return o.ImageDigests.pin(o.PostgresRepository + ":" + version), nil
}

// PostgresUpgradeImage returns the pg_upgrade image between two majors.
func (o Options) PostgresUpgradeImage(from, to int) string {
	o = o.withDefaults()
	return o.ImageDigests.pin(fmt.Sprintf("%s:%d-to-%d", o.PostgresUpgradeRepository, from, to))
}

// Validate checks that the repositories are image references without tags.
func (o Options) Validate() error {
	o = o.withDefaults()
	for _, r := range [][2]string{{"etcd", o.EtcdRepository}, {"postgres", o.PostgresRepository}, {"postgres-upgrade", o.PostgresUpgradeRepository}} {
		name, repo := r[0], r[1]
		if strings.ContainsAny(repo, " @\t\n") || strings.Contains(repo[strings.LastIndex(repo, "/")+1:], ":") {
			return fmt.Errorf("%s repository %q must be a repository without tag or digest", name, repo)
		}
	}
	if strings.ContainsAny(o.CairnImage, " \t\n") {
		return fmt.Errorf("cairn image %q is not an image reference", o.CairnImage)
	}
	if err := o.ImageDigests.Validate(); err != nil {
		return fmt.Errorf("image digests: %w", err)
	}
	return o.validateMonitoring()
}
