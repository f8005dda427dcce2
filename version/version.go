package version

import (
	"runtime"
	"runtime/debug"
)

// Release is the release this build calls itself. Release builds set it
// with -ldflags "-X github.com/cairn-dev/cairn/version.Release=v0.2.0".
var Release = "v0.1.0"

// Info describes one build.
type Info struct {
	// Release is the release name (Release).
	Release string `json:"release"`
	// Revision is the commit the binary was built from, "" when the
	// build recorded none (go run, go test, a build outside Git).
	Revision string `json:"revision,omitempty"`
	// Modified reports uncommitted changes in the build's work tree.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns this binary's Info.
func Get() Info {
	info := Info{Release: Release, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}
