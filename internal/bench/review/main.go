// Command reviewbench measures `validate review` at scale from outside, the
// way a reviewer uses it: the built bin/validate serving a synthetic corpus
// (internal/testkit/synthcorpus with rollout texts of a realistic length;
// no LLM), a headless Chromium pressing keys on the page at a reviewer's
// pace. `make bench-review` runs it on 100,000 records.
//
// It reports the start (from the command's start to the URL it prints:
// the corpus indexed, the logs opened, the page listening), the server's
// peak RSS over the session (VmHWM), and for every key the time from the
// key press to the page's update on the screen and to the server's answer
// (the decision in the log, synced), as the page measures them
// (window.reviewTimings: the key event's time stamp to the next animation
// frame). Then it starts the page again on the log the session wrote, and
// once with --sample.
//
// Usage:
//
//	go run ./internal/bench/review -records 100000
//	go run ./internal/bench/review -records 20000 -keys 60 -dir /tmp/rb -keep
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/bench/benchkit"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

type options struct {
	bin                      string
	records, rollouts, items int
	textLen                  int
	keys                     int
	pace                     time.Duration
	sample                   int
	dir                      string
	keep                     bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	work, cleanup, err := benchkit.WorkDir("reviewbench", o.dir, o.keep)
	if err != nil {
		fmt.Fprintf(stderr, "reviewbench: %v\n", err)
		return 1
	}
	defer cleanup()
	dir := filepath.Join(work, fmt.Sprintf("review-%d-%d-%d-%d", o.records, o.rollouts, o.items, o.textLen))
	if err := ensureCorpus(dir, o, stdout); err != nil {
		fmt.Fprintf(stderr, "reviewbench: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "machine: %d CPUs (GOMAXPROCS %d), %s; load %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), benchkit.MemTotal(), benchkit.LoadAvg())
	if err := os.RemoveAll(filepath.Join(dir, "review")); err != nil {
		fmt.Fprintf(stderr, "reviewbench: %v\n", err)
		return 1
	}
	if err := session(ctx, o, dir, stdout); err != nil {
		fmt.Fprintf(stderr, "reviewbench: %v\n", err)
		return 1
	}
	for _, extra := range [][]string{nil, {"--sample", strconv.Itoa(o.sample), "--seed", "1"}} {
		srv, err := start(ctx, o.bin, dir, extra...)
		if err != nil {
			fmt.Fprintf(stderr, "reviewbench: %v\n", err)
			return 1
		}
		what := "again, on the session's log"
		if extra != nil {
			what = "with " + strings.Join(extra, " ")
		}
		fmt.Fprintf(stdout, "start %s: %.2f s (%.2f s of CPU), RSS %.0f MiB\n", what, srv.started.Seconds(), srv.startCPU.Seconds(), srv.peakMiB())
		srv.stop()
	}
	fmt.Fprintf(stdout, "load after: %s\n", benchkit.LoadAvg())
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("reviewbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the built commands (make build); e.g. -bin bin")
	fs.IntVar(&o.records, "records", 100_000, "records in the synthetic corpus; e.g. -records 10000")
	fs.IntVar(&o.rollouts, "rollouts", 4, "rollouts per record; e.g. -rollouts 8")
	fs.IntVar(&o.items, "items", 7, "rubric items per record (3 to 10)")
	fs.IntVar(&o.textLen, "text", 2000, "characters of each rollout's text")
	fs.IntVar(&o.keys, "keys", 120, "keys pressed on the page (a to accept, n and p, u, f now and then)")
	fs.DurationVar(&o.pace, "pace", 150*time.Millisecond, "time between two keys, a quick reviewer's")
	fs.IntVar(&o.sample, "sample", 500, "records of the --sample start")
	fs.StringVar(&o.dir, "dir", "", "work directory; a corpus of the same sizes there is reused (default: a new temporary directory, removed unless -keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `reviewbench: measure validate review on a synthetic corpus in headless Chromium (no LLM).

Usage:
  go run ./internal/bench/review [flags]

Examples:
  go run ./internal/bench/review -records 100000
  go run ./internal/bench/review -records 10000 -keys 40 -dir /tmp/rb -keep

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	check := synthcorpus.Options{Records: o.records, Rollouts: o.rollouts, Items: o.items}
	if err := check.Check(); err != nil || o.records < 1 || o.keys < 1 || o.textLen < 0 {
		fmt.Fprintf(stderr, "reviewbench: -records and -keys must be positive, -items from 3 to 10 (%v)\n", err)
		return nil, errors.New("bad sizes")
	}
	return o, nil
}

// ensureCorpus writes the corpus unless a finished one is there: the
// synthetic corpus's records with problems and rollout texts as long as a
// real corpus's.
func ensureCorpus(dir string, o *options, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, corpus.ManifestName)); err == nil {
		fmt.Fprintf(stdout, "corpus: %s (reused)\n", dir)
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing a partial corpus: %w", err)
	}
	began := time.Now()
	so := synthcorpus.Options{Records: o.records, Rollouts: o.rollouts, Items: o.items, Seed: 1}
	run, err := corpus.Open(dir, corpus.Options{ShardRows: 5000, ToolVersion: "reviewbench"})
	if err != nil {
		return err
	}
	run.SetFingerprint("reviewbench")
	for i := range o.records {
		rec, _ := so.Record(i)
		rng := rand.New(rand.NewPCG(7, uint64(i)))
		rec.Problem = prose(rng, 300) + " " + rec.Problem
		for k := range rec.Rollouts {
			rec.Rollouts[k].Text = prose(rng, o.textLen) + "\n" + rec.Rollouts[k].Text
		}
		if err := run.Append(&rec); err != nil {
			_ = run.Abandon()
			return err
		}
	}
	if err := run.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "corpus: %s: %d records x %d rollouts of %d characters x %d items, written in %.1fs\n",
		dir, o.records, o.rollouts, o.textLen, o.items, time.Since(began).Seconds())
	return nil
}

var words = strings.Fields("the sum of both terms equals twice the product so we divide by the common factor and check the case " +
	"where n is even then the remainder is zero hence the answer follows from the identity above")

// prose is n characters of words.
func prose(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// server is a running `validate review`.
type server struct {
	cmd      *exec.Cmd
	url      string
	started  time.Duration
	startCPU time.Duration // CPU time used by the URL
	peak     int64         // KiB, the last VmHWM read
}

var openLine = regexp.MustCompile(`open (http://\S+)`)

// start starts bin/validate review on dir and waits for its URL.
func start(ctx context.Context, bin, dir string, extra ...string) (*server, error) {
	args := append([]string{"review", dir, "--reviewer", "bench", "--addr", "127.0.0.1:0"}, extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "validate"), args...)
	errs, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	found := make(chan string, 1)
	go func() { // ends when the server's stderr closes
		sc := bufio.NewScanner(errs)
		var said []string
		for sc.Scan() {
			said = append(said, sc.Text())
			if m := openLine.FindStringSubmatch(sc.Text()); m != nil && len(found) == 0 && s.url == "" {
				found <- m[1]
			}
		}
		select {
		case found <- "exited: " + strings.Join(said, " | "):
		default:
		}
	}()
	select {
	case u := <-found:
		s.started = time.Since(began)
		s.startCPU = s.cpu()
		if !strings.HasPrefix(u, "http://") {
			return nil, fmt.Errorf("validate review did not start: %s", u)
		}
		s.url = u
	case <-time.After(2 * time.Minute):
		s.stop()
		return nil, errors.New("validate review printed no URL in 2 minutes")
	}
	s.readPeak()
	return s, nil
}

// cpu is the CPU time (user and system) the server has used so far, from
// /proc/PID/stat: on a shared machine a fairer figure of its work than the
// wall time, which waits for the other processes.
func (s *server) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks of 1/100 s (USER_HZ on Linux)
}

// readPeak reads the server's peak RSS so far (VmHWM).
func (s *server) readPeak() {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			if kib, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				s.peak = max(s.peak, kib)
			}
		}
	}
}

func (s *server) peakMiB() float64 { return float64(s.peak) / 1024 }

// stop reads the peak RSS and stops the server as Ctrl-C does.
func (s *server) stop() {
	s.readPeak()
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// session starts the page, presses the keys and reports the figures.
func session(ctx context.Context, o *options, dir string, stdout io.Writer) error {
	srv, err := start(ctx, o.bin, dir)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Fprintf(stdout, "start: %.2f s to the URL (%.2f s of CPU on %d CPUs), RSS then %.0f MiB\n", srv.started.Seconds(), srv.startCPU.Seconds(), runtime.NumCPU(), srv.peakMiB())
	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:], chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true))...)
	defer cancel()
	bctx, cancel2 := chromedp.NewContext(actx)
	defer cancel2()
	tctx, cancel3 := context.WithTimeout(bctx, 20*time.Minute)
	defer cancel3()
	if err := chromedp.Do(tctx); err != nil { // the browser started before the clock does
		return fmt.Errorf("starting chromium: %w", err)
	}
	began := time.Now()
	if err := chromedp.Do(tctx, chromedp.Navigate(srv.url), until(`document.body.dataset.record && document.body.dataset.loading === "0" && document.body.dataset.nextReady === "1"`)); err != nil {
		return fmt.Errorf("loading the page: %w", err)
	}
	fmt.Fprintf(stdout, "first record on the screen: %.2f s after the navigation\n", time.Since(began).Seconds())
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range o.keys {
		key := "a"
		switch r := rng.IntN(20); {
		case r == 0:
			key = "n"
		case r == 1:
			key = "p"
		case r == 2:
			key = "u"
		case r == 3:
			key = "j"
		case r == 4 && k%40 == 4:
			key = "f"
		}
		if err := chromedp.Do(tctx, chromedp.KeyEvent(key)); err != nil {
			return fmt.Errorf("key %d: %w", k, err)
		}
		time.Sleep(o.pace) // the reviewer's pace
		if k%10 == 0 {
			srv.readPeak()
		}
	}
	if err := chromedp.Do(tctx, until(`document.body.dataset.outbox === "0" && document.body.dataset.loading === "0"`)); err != nil {
		return fmt.Errorf("waiting for the last decisions: %w", err)
	}
	shown, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64]("window.reviewTimings.filter(x => x.shown != null).map(x => x.shown)"))
	if err != nil {
		return err
	}
	saved, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64]("window.reviewTimings.filter(x => x.saved != null).map(x => x.saved)"))
	if err != nil {
		return err
	}
	byKey, err := chromedp.Run(tctx, chromedp.Evaluate[[]keyTiming]("window.reviewTimings.filter(x => x.shown != null).map(x => ({key: String(x.key), shown: x.shown}))"))
	if err != nil {
		return err
	}
	srv.readPeak()
	fmt.Fprintf(stdout, "%d keys at %v: key to screen %s; key to the log (synced) %s\n", o.keys, o.pace, quantiles(shown), quantiles(saved))
	fmt.Fprintf(stdout, "key to screen by key: %s\n", perKey(byKey))
	fmt.Fprintf(stdout, "peak RSS of validate review over the session: %.0f MiB\n", srv.peakMiB())
	return nil
}

// keyTiming is one key's time to the screen, as the page measured it.
type keyTiming struct {
	Key   string  `json:"key"`
	Shown float64 `json:"shown"`
}

// perKey writes the median and maximum time to the screen of each kind of
// key (its action: accept, or the key moving the page: j, n, p, u), so
// that a slow quantile can be traced to what the key did.
func perKey(ts []keyTiming) string {
	by := map[string][]float64{}
	for _, t := range ts {
		by[t.Key] = append(by[t.Key], t.Shown)
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		s := slices.Sorted(slices.Values(by[k]))
		out = append(out, fmt.Sprintf("%s median %.1f ms, max %.1f ms (%d)", k, s[len(s)/2], s[len(s)-1], len(s)))
	}
	return strings.Join(out, "; ")
}

// quantiles writes the median, 95th percentile and maximum of xs in ms.
func quantiles(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(xs))
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("median %.1f ms, p95 %.1f ms, max %.1f ms (%d)", at(0.5), at(0.95), s[len(s)-1], len(s))
}

// until waits until the page's expression js is true.
func until(js string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			ok, err := chromedp.Evaluate[bool]("!!("+js+")")(ctx, t)
			if err == nil && ok {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}
