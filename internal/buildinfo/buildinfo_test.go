package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "55d43b3c1a2b3c4d5e6f"}, {Key: "vcs.time", Value: "2026-11-25T13:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name, override, main string
		settings             []debug.BuildSetting
		want, line           string
	}{
		{"ldflags override wins", "v1.2.3", "v0.0.0-2026", vcs, "v1.2.3", "v1.2.3 (revision 55d43b3c1a2b (modified), committed 2026-11-25T13:00:00Z, go1.26)"},
		{"module version from go build", "dev", "v0.0.0-20261125130000-55d43b3c1a2b+dirty", vcs, "v0.0.0-20261125130000-55d43b3c1a2b+dirty", ""},
		{"revision only", "", "(devel)", vcs, "devel-55d43b3c1a2b+dirty", ""},
		{"nothing known", "", "", nil, "devel", "devel (go1.26)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fromBuildInfo(tc.override, &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: tc.main}, Settings: tc.settings})
			if in.Version != tc.want {
				t.Errorf("version %q, want %q", in.Version, tc.want)
			}
			if tc.line != "" && in.String() != tc.line {
				t.Errorf("line %q, want %q", in.String(), tc.line)
			}
		})
	}
}

// TestBuiltBinaryNamesItsRevision: distill built with go build from a git
// checkout prints the revision it was built from, not "dev". The test
// builds from a fresh clone of this repository (go stamps no VCS
// information in a git worktree, and this environment's GOFLAGS may turn
// it off), so what it builds is the committed HEAD.
func TestBuiltBinaryNamesItsRevision(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("this test needs the git checkout the package is in: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "clone", "-q", "--shared", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	rev, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "distill")
	// -trimpath: the clone's packages are then the same build actions as
	// those of the last clone, and come from the build cache, instead of
	// compiling the whole module again in a directory it never saw.
	build := exec.Command("go", "build", "-buildvcs=true", "-trimpath", "-o", bin, "./cmd/distill")
	build.Dir = clone
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	line := string(out)
	if !strings.Contains(line, "revision "+string(rev[:12])) || !strings.Contains(line, "committed 20") || strings.HasPrefix(line, "distill dev") {
		t.Errorf("distill version: %q, want revision %s and its time", line, rev[:12])
	}
	t.Logf("%s", line)
}
