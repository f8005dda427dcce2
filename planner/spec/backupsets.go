package spec

import (
	"cmp"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// A cluster's backups are one set: the folder <storageLocation>/<name>/
// (and its archived WAL under <storageLocation>/_wal/<name>/), which the
// runtime lists to find "latest" and walks to apply the retention. Two
// clusters whose sets meet mix their backups: a restore's "latest" may
// pick the other's, and either side's retention may delete the other's.
// These rules keep every set of a repo apart, and apart from the set a
// cluster restores from.

// walFolder is the folder of a location that holds the archived WAL of
// its clusters (runtime/backup's WALPrefix).
const walFolder = "_wal"

// backupSets refuses, across the clusters of a repo, a cluster whose
// backups would mix with another's set:
//
//   - it backs up into the very set it restores from (the same location,
//     and restoreFrom.cluster, or its name by default, is its own name):
//     that set is another cluster's (one of the same name that runs
//     elsewhere, another repo or Kubernetes cluster, or the one it
//     replaces), and the copy's backups would join it;
//   - its storage location lies inside another cluster's set or inside
//     the WAL folder of a location another cluster backs up to, so that
//     cluster's listing and retention walk its backups.
//
// Each error is at the copy's spec.backup.storageLocation and names both
// clusters.
func backupSets(clusters []Cluster) ErrorList {
	var errs ErrorList
	fail := func(c Cluster, format string, args ...any) {
		line, col := c.Source().Position("spec.backup.storageLocation")
		errs = append(errs, &Error{File: c.Source().File, Line: line, Col: col, Path: "spec.backup.storageLocation", Msg: fmt.Sprintf(format, args...)})
	}
	for _, c := range clusters {
		b := c.Common().Backup
		if b == nil {
			continue
		}
		name, loc := c.Ref().Name, locationFolder(b.StorageLocation)
		if r := c.Common().RestoreFrom; r != nil {
			if src := cmp.Or(r.Cluster, name); src == name && locationFolder(r.StorageLocation) == loc {
				fail(c, "%s would back up into the set it restores from (%s, cluster %s): that is the backup set of the cluster %s it was copied from, and the copy's backups would join it: a restore's latest may pick the copy's, and either cluster's retention may delete the other's. Back up to another location, one that holds no other cluster's backups",
					name, loc, src, src)
				continue
			}
		}
		for _, o := range clusters {
			ob := o.Common().Backup
			if o.Ref().Name == name || ob == nil {
				continue
			}
			oloc := locationFolder(ob.StorageLocation)
			switch set, wal := oloc+"/"+o.Ref().Name, oloc+"/"+walFolder; {
			case within(loc, set):
				fail(c, "%s would back up inside the backup set of %s (%s/): %s lists that folder for its backups and its retention deletes in it, so the two clusters' backups would mix. Back up to a location outside it",
					name, o.Ref().Name, set, o.Ref().Name)
			case within(loc, wal):
				fail(c, "%s would back up inside the archived-WAL folder that %s backs up to (%s/): its retention deletes WAL in it, so the two clusters' files would mix. Back up to a location outside it",
					name, o.Ref().Name, wal)
			}
		}
	}
	return errs
}

// locationFolder is a location as the folder it names: scheme, bucket or
// nothing, and the path cleaned, without a trailing slash.
func locationFolder(l Location) string {
	u, err := url.Parse(string(l))
	if err != nil {
		return string(l) // validation refused it already
	}
	p := strings.Trim(u.Path, "/")
	if p != "" {
		p = "/" + path.Clean(p)
	}
	return u.Scheme + "://" + u.Host + p
}

// within reports whether folder is dir or inside it.
func within(folder, dir string) bool {
	return folder == dir || strings.HasPrefix(folder, dir+"/")
}

// ForeignBucket reports whether restore, a restoreFrom location, lies
// outside the bucket of backup, the cluster's own backup policy (nil:
// none, so every bucket is foreign), and says what the cluster's own
// bucket is. A bucket is an s3:// location's bucket, and a file://
// location's folder.
func ForeignBucket(backup *Backup, restore Location) (foreign bool, own string) {
	if backup == nil {
		return true, "the cluster has no spec.backup, so no bucket of its own"
	}
	b := bucketOf(backup.StorageLocation)
	return bucketOf(restore) != b, b
}

// bucketOf is l's bucket: scheme and bucket of an s3:// location, the
// folder of a file:// one.
func bucketOf(l Location) string {
	u, err := url.Parse(string(l))
	if err != nil || u.Scheme == "file" {
		return locationFolder(l)
	}
	return u.Scheme + "://" + u.Host
}
