package spec

// The versions cairn knows, as data: one row per etcd line and per
// PostgreSQL major, each number next to the source that confirms it. When
// a project ships a release or raises an upgrade floor, change that row
// and its source; the parsers, the upgrade path and the messages follow.
//
// A version cairn claims to know must be a real release: raise LastPatch
// or LastMinor only to a release you can point at.

// source is where a number in the tables comes from: the page, and what
// it says there.
type source struct {
	URL  string
	Says string
}

func (s source) String() string { return `"` + s.Says + `" (` + s.URL + `)` }

// etcdMinor is one etcd release line cairn runs.
type etcdMinor struct {
	Minor int // with major 3
	// LastPatch is the newest patch release of the line cairn knows an
	// image for; Newest says where that release is confirmed.
	LastPatch int
	Newest    source
	// UpgradeFloor is the lowest patch of this line from which etcd
	// supports upgrading to the next minor; 0 means any. Floor is the
	// upgrade guide that sets it (or that names none). A line with no
	// next line has neither.
	UpgradeFloor int
	Floor        source
	// Blocked lists patches cairn refuses to run, with the reason.
	Blocked map[int]string
}

const etcdLostWrites = "etcd 3.5.0-3.5.2 can lose writes after a crash (etcd advisory of March 2022); use 3.5.3 or newer"

// etcdLines are the etcd release lines cairn runs, oldest first, one minor
// apart. The renderer takes its image tags from here (renderer/options.go
// checks every version with ParseEtcdVersion); add a line when its first
// release is out.
var etcdLines = []etcdMinor{
	{
		Minor: 2, LastPatch: 32,
		Newest: source{"https://github.com/etcd-io/etcd/blob/main/CHANGELOG/CHANGELOG-3.2.md",
			"v3.2.32 (2021-03-28) is the last 3.2 release; v3.2.33 is listed as TBD"},
		Floor: source{"https://etcd.io/docs/v3.6/upgrades/upgrade_3_3/",
			"To upgrade an existing etcd deployment to 3.3, the running cluster must be 3.2 or greater"},
	},
	{
		Minor: 3, LastPatch: 27,
		Newest: source{"https://github.com/etcd-io/etcd/blob/main/CHANGELOG/CHANGELOG-3.3.md",
			"v3.3.27 (2021-10-15), the last 3.3 release"},
		Floor: source{"https://etcd.io/docs/v3.6/upgrades/upgrade_3_4/",
			"To upgrade an existing etcd deployment to 3.4, the running cluster must be 3.3 or greater"},
	},
	{
		Minor: 4, LastPatch: 45,
		Newest: source{"https://github.com/etcd-io/etcd/blob/main/CHANGELOG/CHANGELOG-3.4.md",
			"v3.4.45 (2026-06-01): this release marks the end of support (EOL) for v3.4. No further patches will be issued"},
		Floor: source{"https://etcd.io/docs/v3.6/upgrades/upgrade_3_5/",
			"To upgrade an existing etcd deployment to 3.5, the running cluster must be 3.4 or greater"},
	},
	{
		Minor: 5, LastPatch: 35,
		Newest: source{"https://github.com/etcd-io/etcd/releases/tag/v3.5.35", "v3.5.35, tagged 2026-10-22"},
		// Raised from 3.5.20 (May 2025) to 3.5.24 (November 2025), 3.5.26
		// (December 2025, https://etcd.io/blog/2025/zombie_members_upgrade/:
		// "Always upgrade to v3.5.26 or later before moving to v3.6") and
		// 3.5.32 (August 2026, https://etcd.io/blog/2026/july-patch-release/).
		UpgradeFloor: 32,
		Floor: source{"https://etcd.io/docs/v3.6/upgrades/upgrade_3_6/",
			"Before upgrading to 3.6, make sure that all of your 3.5 members are updated to 3.5.32 or later"},
		Blocked: map[int]string{0: etcdLostWrites, 1: etcdLostWrites, 2: etcdLostWrites},
	},
	{
		Minor: 6, LastPatch: 16,
		Newest:       source{"https://github.com/etcd-io/etcd/releases/tag/v3.6.16", "v3.6.16, tagged 2026-10-22"},
		UpgradeFloor: 11,
		Floor: source{"https://etcd.io/docs/v3.7/upgrades/upgrade_3_7/",
			"Before upgrading to 3.7, make sure that all of your 3.6 members are updated to 3.6.11 or later"},
	},
	{
		Minor: 7, LastPatch: 3,
		Newest: source{"https://github.com/etcd-io/etcd/releases/tag/v3.7.3", "v3.7.3, tagged 2026-10-22"},
	},
}

// postgresMajor is one PostgreSQL major version cairn can run.
type postgresMajor struct {
	Major int
	// LastMinor is the newest minor release cairn knows an image for;
	// Newest says where that release is confirmed.
	LastMinor int
	Newest    source
	// Blocked lists minors up to LastMinor cairn refuses, with the reason.
	Blocked map[int]string
}

const pgAugust2026 = "August 13, 2026: PostgreSQL 18.6, 17.11, 16.15, 15.19, 14.24 and 19 Beta 3 Released!"

var postgresMajors = []postgresMajor{
	{Major: 13, LastMinor: 23, Newest: source{"https://www.postgresql.org/docs/release/13.23/",
		"November 13, 2025: PostgreSQL 18.1, 17.7, 16.11, 15.15, 14.20, and 13.23 Released! (13.23 is the last 13 release)"}},
	{Major: 14, LastMinor: 24, Newest: source{"https://www.postgresql.org/docs/release/14.24/", pgAugust2026}},
	{Major: 15, LastMinor: 20, Newest: source{"https://www.postgresql.org/docs/release/15.20/",
		"15.20, released November 2026 (Debian bookworm-security postgresql-15 15.20-0+deb12u1, 2026-11-13: New upstream version 15.20)"}},
	{Major: 16, LastMinor: 15, Newest: source{"https://www.postgresql.org/docs/release/16.15/", pgAugust2026}},
	{Major: 17, LastMinor: 11, Newest: source{"https://www.postgresql.org/docs/release/17.11/", pgAugust2026}},
	{Major: 18, LastMinor: 6, Newest: source{"https://www.postgresql.org/docs/release/18.6/", pgAugust2026},
		Blocked: map[int]string{5: "PostgreSQL 18.5 is not a release cairn knows: the August 2026 update went from 18.4 to 18.6; use 18.6"}},
}
