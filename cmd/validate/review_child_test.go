package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// childArgs, when set in the environment, makes the test binary run
// validate with these arguments (separated by \x1f) instead of the tests: the
// browser test's server is a real process it can kill.
const childArgs = "VALIDATE_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgs); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr, os.Getenv))
	}
	code := m.Run()
	shared.Remove()
	os.Exit(code)
}

// reviewServer is `validate review` running as a child process.
type reviewServer struct {
	cmd    *exec.Cmd
	URL    string
	stderr *lockedLines
}

var openLine = regexp.MustCompile(`open (http://\S+)`)

// startReview starts `validate review args...` and waits for its URL.
func startReview(t *testing.T, args ...string) *reviewServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgs+"="+strings.Join(append([]string{"review"}, args...), "\x1f"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &reviewServer{cmd: cmd, stderr: &lockedLines{}}
	t.Cleanup(s.kill)
	found := make(chan string, 1)
	go func() { // owned by the child: ends when its stderr closes
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			s.stderr.add(sc.Text())
			if m := openLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			found <- "exited: " + s.stderr.String()
		}
	}()
	select {
	case u := <-found:
		if !strings.HasPrefix(u, "http://") {
			t.Fatalf("validate review did not start: %s", u)
		}
		s.URL = u
	case <-time.After(20 * time.Second):
		t.Fatal("validate review printed no URL in 20s")
	}
	return s
}

// kill ends the server as a crash would: SIGKILL, no shutdown.
func (s *reviewServer) kill() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

// lockedLines collects a child's stderr lines.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, " | ")
}
