package main

import (
	"strings"
	"testing"
)

// TestVersionFromBuildInfo: validate version prints the version the build
// information gives, with the toolchain, and the -ldflags override wins.
func TestVersionFromBuildInfo(t *testing.T) {
	code, stdout, _ := validate(t, nil, "version")
	if code != exitOK || !strings.HasPrefix(stdout, "validate ") || !strings.Contains(stdout, "go1.") || strings.HasPrefix(stdout, "validate dev ") {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
	old := version
	version = "v2.0.0"
	defer func() { version = old }()
	if _, stdout, _ := validate(t, nil, "version"); !strings.HasPrefix(stdout, "validate v2.0.0") {
		t.Errorf("with -ldflags: %q", stdout)
	}
}
