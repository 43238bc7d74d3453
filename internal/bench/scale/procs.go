package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/internal/bench/benchkit"
)

// simProc is a running simllm process.
type simProc struct {
	cmd    *exec.Cmd
	url    string
	stderr bytes.Buffer
}

// served is what simllm says it served when it stops.
type served struct {
	cpu      time.Duration    // user + system time of simllm
	requests int64            // chat-completions requests sent online
	byStatus map[string]int64 // "200", "none" (no reply: the client left), ...
	batch    batchServed      // what its Batch API did (zero when unused)
}

// batchServed is simllm's batch line: what its simulated Files and Batch
// API did over its life.
type batchServed struct {
	files, refused, batches                                   int64
	byStatus                                                  string // "completed 3"
	answered, failed, expired, cancelled, answeredTwiceOrMore int64
}

// noReply counts the requests not answered with a 200: with no injected
// faults, those cut by the client's exit (no reply, or a 400 for a body cut
// off mid-send) or by the endpoint's shutdown (503).
func (s served) noReply() int64 { return s.requests - s.byStatus["200"] }

// startSim starts simllm over the problems; extra are more flags (the
// Batch API's).
func startSim(ctx context.Context, bin, problems string, latency time.Duration, extra ...string) (*simProc, error) {
	s := &simProc{}
	args := append([]string{"-latency", latency.String(), "-problems", problems}, extra...)
	s.cmd = exec.CommandContext(ctx, bin+"/simllm", args...)
	s.cmd.Stderr = &s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("simllm: %w", err)
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting simllm: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		return nil, fmt.Errorf("reading simllm's URL: %w\n%s", err, s.stderr.String())
	}
	s.url = strings.TrimSpace(line)
	return s, nil
}

var (
	servedLine = regexp.MustCompile(`stopped after (\d+) requests \(by status: ([^)]*)\)`)
	batchLine  = regexp.MustCompile(`batch API: (\d+) files uploaded \((\d+) refused\), (\d+) batches \(([^)]*)\); ` +
		`rows answered (\d+), failed (\d+), expired (\d+), cancelled (\d+); requests answered more than once: (\d+)`)
)

// stop ends simllm with SIGTERM and reads its served-requests line.
func (s *simProc) stop() (served, error) {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return served{}, fmt.Errorf("stopping simllm: %w", err)
	}
	if err := s.cmd.Wait(); err != nil {
		return served{}, fmt.Errorf("simllm: %w\n%s", err, s.stderr.String())
	}
	sv, err := parseServed(s.stderr.String())
	sv.cpu, _ = benchkit.Used(s.cmd.ProcessState)
	return sv, err
}

// parseServed reads simllm's last line, "simllm: stopped after N requests
// (by status: 200 N, none M)".
func parseServed(stderr string) (served, error) {
	m := servedLine.FindStringSubmatch(stderr)
	if m == nil {
		return served{}, fmt.Errorf("simllm printed no served-requests line:\n%s", stderr)
	}
	total, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return served{}, fmt.Errorf("simllm's served-requests line %q: %w", m[0], err)
	}
	sv := served{requests: total, byStatus: map[string]int64{}, batch: parseBatchLine(stderr)}
	if total == 0 { // "by status: none sent"
		return sv, nil
	}
	for part := range strings.SplitSeq(m[2], ", ") {
		name, count, ok := strings.Cut(part, " ")
		v, err := strconv.ParseInt(count, 10, 64)
		if !ok || err != nil {
			return served{}, fmt.Errorf("simllm's served-requests line %q: bad count %q", m[0], part)
		}
		sv.byStatus[name] = v
	}
	return sv, nil
}

// parseBatchLine reads simllm's batch line, "simllm: batch API: 3 files
// uploaded (0 refused), 3 batches (completed 3); rows answered 900, ...";
// simllm prints none when nothing was uploaded.
func parseBatchLine(stderr string) batchServed {
	b := batchLine.FindStringSubmatch(stderr)
	if b == nil {
		return batchServed{}
	}
	n := make([]int64, 0, 8)
	for _, i := range []int{1, 2, 3, 5, 6, 7, 8, 9} {
		v, _ := strconv.ParseInt(b[i], 10, 64) // the pattern took digits only
		n = append(n, v)
	}
	return batchServed{files: n[0], refused: n[1], batches: n[2], byStatus: b[4], answered: n[3], failed: n[4],
		expired: n[5], cancelled: n[6], answeredTwiceOrMore: n[7]}
}

// session is one finished distill process.
type session struct {
	wall    time.Duration
	cpu     time.Duration // user + system time
	maxRSS  int64         // KiB
	code    int           // exit code; -1 when killed by a signal
	logPath string
}

// distill runs bin/distill run once. When watch is set it is called every
// 100 ms while the process runs; returning true kills the process with
// SIGKILL.
func runDistill(ctx context.Context, bin string, args []string, logPath string, watch func() bool) (_ session, err error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return session{}, fmt.Errorf("creating %s: %w", logPath, err)
	}
	defer func() {
		if cerr := logf.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("writing %s: %w", logPath, cerr)
		}
	}()
	cmd := exec.CommandContext(ctx, bin+"/distill", append([]string{"run"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return session{}, fmt.Errorf("starting distill: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	err = waitOrKill(cmd, done, watch)
	s := session{wall: time.Since(start), logPath: logPath, code: cmd.ProcessState.ExitCode()}
	s.cpu, s.maxRSS = benchkit.Used(cmd.ProcessState)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return s, fmt.Errorf("distill: %w", err)
	}
	return s, nil
}

func waitOrKill(cmd *exec.Cmd, done <-chan error, watch func() bool) error {
	if watch == nil {
		return <-done
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if watch() {
				_ = cmd.Process.Kill()
				return <-done
			}
		}
	}
}

// tail is the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
