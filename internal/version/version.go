// Package version names the aegis binary that runs: what aegis version
// prints and each session_start records as "aegis", so that a log and a
// benchmark's figures name the code that made them.
package version

import (
	"runtime/debug"
	"strings"
)

// Of returns set (a version given at link time, -ldflags "-X …") when it
// is not empty; otherwise the module version go install recorded, or
// "dev". A binary built from a checkout (go build, without
// -buildvcs=false) also names its commit, and says if the tree had
// changes.
func Of(set string) string {
	if set != "" {
		return set
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuild(bi)
}

// fromBuild is Of's reading of the build information.
func fromBuild(bi *debug.BuildInfo) string {
	v := "dev"
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " (" + rev[:min(12, len(rev))]
		if modified == "true" {
			v += ", modified"
		}
		v += ")"
	}
	return v
}
