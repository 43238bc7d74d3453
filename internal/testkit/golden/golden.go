// Package golden compares a test's output with a golden file, or rewrites
// the file when the test runs with -update. It is for tests only.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with the file at path; with -update it writes got
// there instead. A difference is reported with its first differing line.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from this output (go test -update rewrites it):\n%s", path, FirstDiff(got, want))
	}
}

// CheckAgreeing is Check for an output whose figures must agree with
// each other: disagree lists the ways they do not (nil when they agree),
// and an output that disagrees is refused, even with -update, so a golden
// file never pins figures that contradict each other.
func CheckAgreeing(t testing.TB, path string, got []byte, disagree func(text string) []string) {
	t.Helper()
	if problems := disagree(string(got)); len(problems) > 0 {
		t.Fatalf("the output for %s contradicts itself:\n  %s\n%s", path, strings.Join(problems, "\n  "), got)
	}
	Check(t, path, got)
}

// FirstDiff describes where got and want first differ: the line number
// and both lines. In a dump made of sections (lines starting "== "), it
// names the first differing line of each section that differs.
func FirstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	var b strings.Builder
	section, reported := "", "\x00"
	for i := range max(len(g), len(w)) {
		gl, wl := lineOr(g, i), lineOr(w, i)
		if strings.HasPrefix(wl, "== ") {
			section = wl
		}
		if gl != wl && section != reported {
			if section != "" {
				b.WriteString(section + ", ")
			}
			fmt.Fprintf(&b, "line %d:\n got: %s\nwant: %s\n", i+1, gl, wl)
			reported = section
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func lineOr(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<end of file>"
}
