package backup

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config reaches an S3-compatible endpoint. Credentials never appear in
// errors or logs.
type S3Config struct {
	// Endpoint is a URL such as https://s3.eu-west-1.amazonaws.com or
	// http://127.0.0.1:9000; empty means AWS's s3.amazonaws.com.
	Endpoint string
	Region   string
	// AccessKeyID, SecretAccessKey and SessionToken are static
	// credentials; empty asks the environment's chain (AWS variables,
	// then the pod's IAM role).
	AccessKeyID, SecretAccessKey, SessionToken string
	// CABundle is PEM certificates to trust for an https endpoint with a
	// private CA (CAIRN_S3_CA holds them, or AWS_CA_BUNDLE names their
	// file); empty trusts the system's.
	CABundle []byte
	// PartSize is the multipart upload's part size (CAIRN_S3_PART_SIZE,
	// in MiB): a ten-thousandth of the largest backup S3 takes (16 MiB:
	// about 156 GiB). An upload holds up to four parts in memory
	// (S3Store.partsInFlight): 64 MiB at 16 MiB. Zero is 16 MiB.
	PartSize uint64
}

// An upload sends up to maxPartsInFlight parts at once, as many as fit in
// uploadMemory and at least one: the next parts fill while earlier ones
// are still on the wire or being stored, so neither the database nor the
// endpoint waits on the other. One upload holds partsInFlight x PartSize
// bytes: 64 MiB at the default 16 MiB parts, at most the larger of
// uploadMemory and one part.
const (
	maxPartsInFlight = 4
	uploadMemory     = 256 << 20
)

// transportBuffer is the HTTP connection's write buffer.
const transportBuffer = 256 << 10

// S3ConfigFromEnv reads CAIRN_S3_ENDPOINT (or AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL), AWS_REGION, CAIRN_S3_CA or AWS_CA_BUNDLE, and the
// AWS credential variables. CAIRN_S3_CA is the CA's PEM itself: the
// rendered pods take their S3 settings from the <cluster>-backup Secret's
// keys as variables, and mount no file a path could name.
func S3ConfigFromEnv(getenv func(string) string) (S3Config, error) {
	c := S3Config{Region: getenv("AWS_REGION"), AccessKeyID: getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: getenv("AWS_SESSION_TOKEN")}
	for _, k := range []string{"CAIRN_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if v := getenv(k); v != "" {
			c.Endpoint = v
			break
		}
	}
	if v := getenv("CAIRN_S3_PART_SIZE"); v != "" {
		mib, err := strconv.ParseUint(v, 10, 32)
		if err != nil || mib < 5 || mib > 5120 {
			return c, fmt.Errorf("CAIRN_S3_PART_SIZE %q: want MiB from 5 to 5120", v)
		}
		c.PartSize = mib << 20
	}
	pem, f := getenv("CAIRN_S3_CA"), getenv("AWS_CA_BUNDLE")
	switch {
	case pem != "" && f != "":
		return c, fmt.Errorf("CAIRN_S3_CA and AWS_CA_BUNDLE are both set: set one")
	case pem != "":
		// NewS3Store refuses a bundle without a certificate.
		c.CABundle = []byte(pem)
	case f != "":
		data, err := os.ReadFile(f)
		if err != nil {
			return c, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
		}
		c.CABundle = data
	}
	return c, nil
}

// S3Store keeps objects under a bucket's prefix.
type S3Store struct {
	client *minio.Client
	bucket string
	prefix string
	// PartSize is the multipart upload's part size; an upload holds
	// partsInFlight of them. Default 16 MiB.
	PartSize uint64
}

// partsInFlight is how many parts of one upload go up at once.
func (s *S3Store) partsInFlight() uint {
	return uint(min(maxPartsInFlight, max(1, uploadMemory/max(s.PartSize, 1))))
}

// NewS3Store returns the store of an s3:// location.
func NewS3Store(loc Location, cfg S3Config) (*S3Store, error) {
	host, secure := "s3.amazonaws.com", true
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.User != nil {
			shown := "(unparsable)"
			if err == nil {
				shown = u.Redacted()
			}
			return nil, fmt.Errorf("S3 endpoint %s: want http(s)://host[:port], with credentials in their own settings", shown)
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.IAM{}})
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	// A part goes to the connection in writes of this size, so TLS sends
	// full 16 KiB records (net/http's 4 KiB default makes four times the
	// records and write calls, on both ends).
	tr.WriteBufferSize = transportBuffer
	if len(cfg.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CABundle) {
			return nil, fmt.Errorf("S3 CA bundle: no PEM certificate in it")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	opts := &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: minio.BucketLookupPath, Transport: tr}
	c, err := minio.New(host, opts)
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", loc, err)
	}
	return &S3Store{client: c, bucket: loc.Bucket, prefix: loc.Prefix, PartSize: cmp.Or(cfg.PartSize, 16<<20)}, nil
}

func (s *S3Store) key(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return path.Join(s.prefix, key), nil
}

// Put implements Store: an object that knows its length below PartSize
// (a manifest) goes up in one PUT; anything else is read into the parts
// of a multipart upload, as Create makes one.
func (s *S3Store) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	k, err := s.key(key)
	if err != nil {
		return 0, err
	}
	if l, ok := r.(interface{ Len() int }); ok && uint64(l.Len()) < s.PartSize {
		info, err := s.client.PutObject(ctx, s.bucket, k, r, int64(l.Len()), minio.PutObjectOptions{ContentType: "application/octet-stream"})
		if err != nil {
			return 0, fmt.Errorf("put s3://%s/%s: %w", s.bucket, k, s3Error(err))
		}
		return info.Size, nil
	}
	o, err := s.Create(ctx, key)
	if err != nil {
		return 0, err
	}
	if _, err := o.(io.ReaderFrom).ReadFrom(r); err != nil {
		o.Abort()
		return 0, err
	}
	return o.Commit()
}

// Get implements Store.
func (s *S3Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, k, minio.GetObjectOptions{})
	var info minio.ObjectInfo
	if err == nil {
		info, err = obj.Stat()
	}
	if err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, fmt.Errorf("get s3://%s/%s: %w", s.bucket, k, ErrNotFound)
		}
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.bucket, k, s3Error(err))
	}
	return sizedS3Object{obj, info.Size}, nil
}

// sizedS3Object is an S3 object being read, with the size its HEAD
// reported (sizedObject).
type sizedS3Object struct {
	*minio.Object
	size int64
}

func (o sizedS3Object) Size() int64 { return o.size }

// List implements Store.
func (s *S3Store) List(ctx context.Context, prefix string) ([]string, error) {
	full := path.Join(s.prefix, prefix)
	if strings.HasSuffix(prefix, "/") {
		full += "/"
	}
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", s.bucket, full, s3Error(obj.Err))
		}
		key := strings.TrimPrefix(obj.Key, s.prefix)
		keys = append(keys, strings.TrimPrefix(key, "/"))
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete implements Store.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, k, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete s3://%s/%s: %w", s.bucket, k, s3Error(err))
	}
	return nil
}

// s3Error says what an S3 error means for a person, keeping its code.
func s3Error(err error) error {
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchBucket":
		return fmt.Errorf("the bucket does not exist (%s): %w", resp.Code, err)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied":
		return fmt.Errorf("the credentials were refused (%s): %w", resp.Code, err)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("the endpoint cannot be reached: %w", err)
	}
	return err
}
