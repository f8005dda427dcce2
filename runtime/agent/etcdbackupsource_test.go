package agent

import (
	"context"
	"crypto/tls"
	"strconv"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// Over TLS, the member a backup is taken from is reached at its pod's
// address and verified against the client Service's name: the members'
// certificates carry DNS names only, so a name taken from the address
// would never verify (on a real node the backup then waited for ever).
// The pass's own TLS configuration is left as it was.
func TestEtcdBackupSourceVerifiesTheServiceName(t *testing.T) {
	b := newBackupBed(t)
	m := &Membership{Client: b.c, Namespace: b.ns, Cluster: "kv", Port: b.port}
	shared := &tls.Config{MinVersion: tls.VersionTLS12}
	m.tls.Store(shared)
	src, kind, err := m.BackupSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	es, ok := src.(backup.EtcdSource)
	if !ok || kind != "EtcdCluster" || es.Member != "kv-0" || es.TLS == nil {
		t.Fatalf("source %+v %s", src, kind)
	}
	if want := contract.EtcdClientServerName("kv", b.ns); es.TLS.ServerName != want || es.Endpoint != "https://127.0.0.1:"+strconv.Itoa(b.port) {
		t.Fatalf("endpoint %s verified as %q, want https://127.0.0.1:%d as %q", es.Endpoint, es.TLS.ServerName, b.port, want)
	}
	if shared.ServerName != "" {
		t.Fatalf("the pass's TLS configuration changed: ServerName %q", shared.ServerName)
	}
}
