// Package buildinfo names the build of the running program, for every
// command's version line and for the tool_version a record's provenance and
// a run's manifest keep: the version -ldflags "-X main.version=..." set when
// there is one, else what the Go toolchain stamped into the binary (the main
// module's version, which go build derives from the VCS tag or commit, and
// the VCS revision, time and dirty flag).
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is what is known of a build.
type Info struct {
	Version  string // the -ldflags override, the module version, or "devel-REVISION"; never empty
	Revision string // VCS revision, "" when unknown
	Time     string // VCS commit time (RFC 3339), "" when unknown
	Modified bool   // built from a working tree with uncommitted changes
	Go       string // the toolchain
}

// Read returns the build of the running program; override is the version
// set with -ldflags ("" or "dev" when none was).
func Read(override string) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return fromBuildInfo(override, bi)
}

func fromBuildInfo(override string, bi *debug.BuildInfo) Info {
	in := Info{Go: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	switch mv := bi.Main.Version; {
	case override != "" && override != "dev":
		in.Version = override
	case mv != "" && mv != "(devel)":
		in.Version = mv
	case in.Revision != "":
		in.Version = "devel-" + short(in.Revision)
		if in.Modified {
			in.Version += "+dirty"
		}
	default:
		in.Version = "devel" // a test binary, or a build without VCS information
	}
	return in
}

// Version is Read(override).Version.
func Version(override string) string { return Read(override).Version }

// String is the one-line description a command's version prints: the
// version, then the revision and time it was built from and the toolchain.
func (in Info) String() string {
	var extra []string
	if in.Revision != "" {
		r := "revision " + short(in.Revision)
		if in.Modified {
			r += " (modified)"
		}
		extra = append(extra, r)
	}
	if in.Time != "" {
		extra = append(extra, "committed "+in.Time)
	}
	if in.Go != "" {
		extra = append(extra, in.Go)
	}
	if len(extra) == 0 {
		return in.Version
	}
	return fmt.Sprintf("%s (%s)", in.Version, strings.Join(extra, ", "))
}

func short(rev string) string { return rev[:min(len(rev), 12)] }
