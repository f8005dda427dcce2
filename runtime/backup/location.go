package backup

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Location is a parsed backup.storageLocation.
type Location struct {
	// Scheme is "s3" or "file".
	Scheme string
	// Bucket and Prefix locate an s3:// location; Prefix has no leading or
	// trailing slash.
	Bucket, Prefix string
	// Path is a file:// location's absolute folder.
	Path string
}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ParseLocation parses s3://bucket/prefix or file:///absolute/path.
func ParseLocation(s string) (Location, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Location{}, fmt.Errorf("backup location %q: %w", s, err)
	}
	switch u.Scheme {
	case "s3":
		if !bucketRE.MatchString(u.Host) {
			return Location{}, fmt.Errorf("backup location %q: %q is not an S3 bucket name", s, u.Host)
		}
		prefix := strings.Trim(u.Path, "/")
		if prefix != "" && path.Clean(prefix) != prefix {
			return Location{}, fmt.Errorf("backup location %q: prefix must be a clean path", s)
		}
		return Location{Scheme: "s3", Bucket: u.Host, Prefix: prefix}, nil
	case "file":
		if u.Host != "" || !path.IsAbs(u.Path) || path.Clean(u.Path) != u.Path {
			return Location{}, fmt.Errorf("backup location %q: want file:///absolute/clean/path", s)
		}
		return Location{Scheme: "file", Path: u.Path}, nil
	}
	return Location{}, fmt.Errorf("backup location %q: want s3://bucket/prefix or file:///path", s)
}

func (l Location) String() string {
	if l.Scheme == "file" {
		return "file://" + l.Path
	}
	if l.Prefix == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}
