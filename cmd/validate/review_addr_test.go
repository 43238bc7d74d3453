package main

import (
	"net"
	"strings"
	"testing"
)

// TestReviewBusyPortNamesAddr: a port another program holds is refused
// with a hint at --addr; and -h gives --reviewer's default once (issue 43,
// item 10).
func TestReviewBusyPortNamesAddr(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	run := writeRun(t, 3, nil)
	code, _, stderr := validate(t, map[string]string{"USER": "alice"}, "review", run, "--addr", ln.Addr().String())
	if code != exitFailed || !strings.Contains(stderr, "address already in use") || !strings.Contains(stderr, "--addr 127.0.0.1:0") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	_, stdout, help := validate(t, map[string]string{"USER": "alice"}, "review", "-h")
	text := stdout + help
	i := strings.Index(text, "\n  -reviewer")
	if i < 0 {
		t.Fatalf("no --reviewer in -h:\n%s", text)
	}
	line := text[i:]
	if j := strings.Index(line[1:], "\n  -"); j > 0 {
		line = line[:j]
	}
	if strings.Count(line, "default") != 1 {
		t.Errorf("--reviewer's help gives its default %d times: %q", strings.Count(line, "default"), line)
	}
}
