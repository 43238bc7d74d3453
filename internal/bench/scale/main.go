// Command benchscale measures `distill run` at scale from outside, the way a
// user runs it: the built bin/distill against the SIMULATED endpoint
// bin/simllm (not a model) over N generated problems, n=8 rollouts plus
// distill and judge, at a fixed mean latency and request concurrency.
// `make bench-scale` runs it.
//
// For every size it reports the wall time, the requests sent (counted by the
// endpoint and by the run's report.json), the goodput efficiency (ideal /
// wall, where ideal = requests x mean latency / concurrency) and the peak RSS
// of the distill process; then it resumes the finished run (time, requests
// sent). At one size it also kills a fresh run with SIGKILL when about half
// of its problems are done, resumes it, and compares the requests both
// sessions sent with the uninterrupted run's.
//
// Usage:
//
//	go run ./internal/bench/scale -problems 10000,100000
//	go run ./internal/bench/scale -problems 5000 -kill-size 5000 -keep
//	go run ./internal/bench/scale -style grounded -problems 100000 -kill-size 100000
//
// With -style grounded the problems are one-passage documents that go
// through analyze, synthesize (one question), enrich and judge.
//
// With -mode batch every stage goes through the simulated Files and Batch
// API (batch.go): it reports the batches and waves, the time spent writing,
// uploading, waiting at the provider, downloading and ingesting the files,
// and kills a run with SIGKILL once its first batch is submitted, resumes it
// against the same endpoint, and checks that no batch was made again and no
// request answered twice.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/internal/bench/benchkit"
)

type options struct {
	bin         string
	sizes       []int
	killSize    int
	concurrency int
	latency     time.Duration
	n           int
	dir         string
	keep        bool
	profile     bool
	style       string // srar, or grounded: passages through analyze, synthesize, enrich and judge
	// mode is online, or batch: every stage through the simulated Batch
	// API, answered after turnaround and polled every poll.
	mode             string
	turnaround, poll time.Duration
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
	dir, cleanup, err := benchkit.WorkDir("benchscale", o.dir, o.keep)
	if err != nil {
		fmt.Fprintf(stderr, "benchscale: %v\n", err)
		return 1
	}
	defer cleanup()
	b := &bench{opt: o, dir: dir, log: stderr}
	results, err := b.all(ctx)
	printTable(stdout, o, results)
	if err != nil {
		fmt.Fprintf(stderr, "benchscale: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("benchscale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("problems", "10000,100000", "problem counts to measure, comma-separated (e.g. -problems 2000)")
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the built distill and simllm (make build; go build -o bin/simllm ./examples/simllm)")
	fs.IntVar(&o.killSize, "kill-size", -1, "size at which to kill a run at 50% (-mode batch: once its first batch is submitted) and resume it (-1: the smallest of -problems; 0: skip; e.g. -kill-size 10000)")
	fs.IntVar(&o.concurrency, "concurrency", 512, "limits.concurrency of the job (e.g. -concurrency 256)")
	fs.DurationVar(&o.latency, "latency", 200*time.Millisecond, "mean latency of the simulated endpoint (e.g. -latency 100ms)")
	fs.IntVar(&o.n, "n", 8, "rollouts per problem (e.g. -n 4)")
	fs.StringVar(&o.dir, "dir", "", "work directory (default: a new temporary directory, removed at the end unless -keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (problems, job files, run directories, logs)")
	fs.StringVar(&o.style, "style", "srar", "srar (problems: n rollouts, distill, judge) or grounded (one-passage documents: analyze, synthesize, enrich, judge); e.g. -style grounded")
	fs.StringVar(&o.mode, "mode", "online", "online, or batch: rollout, distill and judge in batch mode (request_mode: batch) through the simulated Files and Batch API at OpenAI's limits (50,000 requests, 200 MB a file); e.g. -mode batch")
	fs.DurationVar(&o.turnaround, "batch-turnaround", 3*time.Second, "with -mode batch: the simulated provider's time from a batch's creation to completed (e.g. -batch-turnaround 5s)")
	fs.DurationVar(&o.poll, "batch-poll", time.Second, "with -mode batch: the job's batch.poll_interval (e.g. -batch-poll 2s)")
	fs.BoolVar(&o.profile, "profile", false, "pass --cpuprofile and --memprofile to the uninterrupted runs (files in the work directory; implies -keep)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `benchscale: measure distill run at scale against the SIMULATED endpoint (simllm).

Usage:
  go run ./internal/bench/scale [flags]

Examples:
  go run ./internal/bench/scale -problems 10000,100000
  go run ./internal/bench/scale -problems 5000 -kill-size 5000 -keep
  go run ./internal/bench/scale -mode batch -problems 10000,100000 -kill-size 100000

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(*sizes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			fmt.Fprintf(stderr, "benchscale: -problems %q: want positive counts, comma-separated\n", *sizes)
			return nil, errors.New("bad -problems")
		}
		o.sizes = append(o.sizes, v)
	}
	if o.killSize < 0 {
		o.killSize = o.sizes[0]
		for _, s := range o.sizes {
			o.killSize = min(o.killSize, s)
		}
	}
	if o.killSize > 0 && !slices.Contains(o.sizes, o.killSize) {
		fmt.Fprintf(stderr, "benchscale: -kill-size %d is not one of -problems %s\n", o.killSize, *sizes)
		return nil, errors.New("bad -kill-size")
	}
	if o.style != "srar" && o.style != "grounded" {
		fmt.Fprintf(stderr, "benchscale: -style %q is not srar or grounded\n", o.style)
		return nil, errors.New("bad -style")
	}
	if o.mode != "online" && o.mode != "batch" || o.mode == "batch" && o.style != "srar" {
		fmt.Fprintf(stderr, "benchscale: -mode %q: want online, or batch (with -style srar)\n", o.mode)
		return nil, errors.New("bad -mode")
	}
	if o.turnaround < 0 || o.poll <= 0 {
		fmt.Fprintln(stderr, "benchscale: -batch-turnaround must be >= 0 and -batch-poll > 0")
		return nil, errors.New("bad batch flags")
	}
	if o.concurrency < 1 || o.n < 1 || o.latency <= 0 {
		fmt.Fprintln(stderr, "benchscale: -concurrency, -n and -latency must be positive")
		return nil, errors.New("bad flags")
	}
	o.keep = o.keep || o.profile
	return o, nil
}
