package backup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestS3ConfigFromEnvCA: a private CA comes as the PEM itself
// (CAIRN_S3_CA, what a pod gets from its <cluster>-backup Secret) or as a
// file (AWS_CA_BUNDLE), never both; a bundle without a certificate is
// refused when the store is made.
func TestS3ConfigFromEnvCA(t *testing.T) {
	const pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2Fpcm4gdGVzdCBDQSBvbmx5MAoGCCqGSM49BAMCMBQx\n-----END CERTIFICATE-----\n"
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, []byte(pem), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "none"},
		{name: "PEM in the variable", env: map[string]string{"CAIRN_S3_CA": pem}, want: pem},
		{name: "a file", env: map[string]string{"AWS_CA_BUNDLE": file}, want: pem},
		{name: "both", env: map[string]string{"CAIRN_S3_CA": pem, "AWS_CA_BUNDLE": file}, wantErr: "both set"},
		{name: "a missing file", env: map[string]string{"AWS_CA_BUNDLE": file + ".gone"}, wantErr: "AWS_CA_BUNDLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := S3ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(c.CABundle) != tc.want {
				t.Fatalf("CA bundle %q, error %v; want %q", c.CABundle, err, tc.want)
			}
		})
	}
	loc, err := ParseLocation("s3://bucket/prefix")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewS3Store(loc, S3Config{Endpoint: "https://s3.example", CABundle: []byte("not a certificate")})
	if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a bundle without a certificate: %v", err)
	}
}
