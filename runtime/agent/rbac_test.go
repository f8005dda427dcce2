package agent

// The runtime runs in these tests under the Role the renderer writes for
// these specs (testbed.ApplyRenderedRBAC).

const (
	pgSpec   = "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: pg}\nspec: {version: \"15.4\", instances: 1, storage: 1Gi}\n"
	etcdSpec = "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 3, version: \"3.7.3\"}\n"
)
