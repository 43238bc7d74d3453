package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGitignoreCoversTheTours: what the README's tours write in a clone
// (runs/, exports/, sim.url) is ignored by git (issue 43, item 10: exports/
// and sim.url were not).
func TestGitignoreCoversTheTours(t *testing.T) {
	b, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		ignored[strings.Trim(strings.TrimSpace(line), "/")] = true
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	written := regexp.MustCompile(`(?:--out|>) ((?:runs|exports)/[^ /]+|[a-z.]+\.url)`)
	for _, m := range written.FindAllStringSubmatch(string(readme), -1) {
		top, _, _ := strings.Cut(m[1], "/")
		if !ignored[top] {
			t.Errorf("the README's tour writes %s, and .gitignore does not ignore %s", m[1], top)
		}
	}
}

// TestToursSayHowToStopServers: every shown command that starts a server in
// the background (a line ending in "&") is followed, in its block or the
// text after it, by how to stop it (issue 43, item 10).
func TestToursSayHowToStopServers(t *testing.T) {
	pages, _ := filepath.Glob("../../docs/*.md")
	for _, page := range append(pages, "../../README.md") {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if !strings.HasSuffix(strings.TrimSpace(line), "&") {
				continue
			}
			rest := strings.Join(lines[i+1:min(len(lines), i+40)], "\n")
			if !strings.Contains(rest, "kill") {
				t.Errorf("%s:%d starts a server in the background and does not say how to stop it: %q", filepath.Base(page), i+1, line)
			}
		}
	}
}
