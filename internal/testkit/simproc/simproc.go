// Package simproc runs the simulated endpoint (internal/sim) in a process
// of its own, built without the race detector (testbin), and follows its
// request log: for tests that need the log (how many requests arrived,
// which were sent again) but are not about the endpoint, so that serving
// every request does not run under the test's race detector.
package simproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
)

// Server is a simulated endpoint running in its own process.
type Server struct {
	// URL is its base URL (ending in /v1).
	URL string

	count atomic.Int64
	mu    sync.Mutex
	log   []sim.Entry
}

// Start starts the simulated endpoint with cfg in its own process (the
// request log is always kept) and stops it when the test ends. cfg may
// not set what does not cross a process: Logger, Prompts.
func Start(t testing.TB, cfg sim.Config) *Server {
	t.Helper()
	if cfg.Logger != nil || cfg.Prompts != nil {
		t.Fatal("simproc: a Logger or a PromptRecorder cannot reach the endpoint's own process")
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sim.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testbin.Command(t, "internal/testkit/simproc/cmd/simproc"), path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // its end ends the endpoint
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-read:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-read
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("simproc: %v\n%s", err, stderr.String())
		}
	})
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(first), "url ")
	if err != nil || !ok {
		close(read)
		t.Fatalf("simproc did not say its URL (%q, %v)", first, err)
	}
	s := &Server{URL: url}
	go func() {
		defer close(read)
		if err := s.follow(lines); err != nil {
			t.Errorf("simproc: %v", err)
		}
	}()
	return s
}

// follow reads the endpoint's reports until its output ends.
func (s *Server) follow(r *bufio.Reader) error {
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "+":
			s.count.Add(1)
		case strings.HasPrefix(line, "e "):
			var e sim.Entry
			if err := json.Unmarshal([]byte(line[2:]), &e); err != nil {
				return fmt.Errorf("a log entry: %w", err)
			}
			s.mu.Lock()
			s.log = append(s.log, e)
			s.mu.Unlock()
		default:
			return fmt.Errorf("unexpected line %q", line)
		}
	}
}

// Count is the number of chat-completions requests that reached the
// endpoint so far, as [sim.Server.Count].
func (s *Server) Count() int64 { return s.count.Load() }

// Log returns a copy of the request log so far, as [sim.Server.Log]: an
// entry is in it once its request's answer was sent, or it ended without
// one.
func (s *Server) Log() []sim.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sim.Entry(nil), s.log...)
}
