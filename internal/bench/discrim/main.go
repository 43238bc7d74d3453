// Command discrimbench measures, from outside, the built commands that read
// a large synthetic corpus: it writes (or reuses) a run directory of N
// records × R rollouts × I items with satisfaction verdicts
// (internal/testkit/synthcorpus, no LLM), then runs each command once and prints
// its exit code, wall time, CPU time (user + system) and peak RSS, with the
// machine's load average before and after, since the machine may be shared.
// `make bench-discrim` runs it for `validate` (whose discrimination section
// reads every verdict).
//
// Usage:
//
//	go run ./internal/bench/discrim -records 100000
//	go run ./internal/bench/discrim -dir /tmp/db -keep -run 'validate {corpus} --json' -run 'distill refine {corpus} --out {work}/refined'
//
// In a -run command, {corpus} is the run directory and {work} the work
// directory; the first word names a program in -bin. Each command's stdout
// and stderr are kept in the work directory; for `validate ... --json` the
// records read and measured by the discrimination section are printed too.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/internal/bench/benchkit"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

type options struct {
	bin                      string
	records, rollouts, items int
	seed                     uint64
	dir                      string
	keep                     bool
	runs                     []string
}

type runList []string

func (r *runList) String() string     { return strings.Join(*r, "; ") }
func (r *runList) Set(s string) error { *r = append(*r, s); return nil }

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
	work, cleanup, err := benchkit.WorkDir("discrimbench", o.dir, o.keep)
	if err != nil {
		fmt.Fprintf(stderr, "discrimbench: %v\n", err)
		return 1
	}
	defer cleanup()
	corpusDir := filepath.Join(work, fmt.Sprintf("synth-%d-%d-%d-%d", o.records, o.rollouts, o.items, o.seed))
	if err := ensureCorpus(corpusDir, o, stdout); err != nil {
		fmt.Fprintf(stderr, "discrimbench: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "machine: %d CPUs (GOMAXPROCS %d), %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), benchkit.MemTotal())
	for k, tmpl := range o.runs {
		line := strings.NewReplacer("{corpus}", corpusDir, "{work}", work).Replace(tmpl)
		m, err := measure(ctx, o.bin, strings.Fields(line), filepath.Join(work, fmt.Sprintf("run-%d", k+1)))
		if err != nil {
			fmt.Fprintf(stderr, "discrimbench: %s: %v\n", line, err)
			return 1
		}
		m.print(stdout, line)
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	var runs runList
	fs := flag.NewFlagSet("discrimbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the built commands (make build); e.g. -bin bin")
	fs.IntVar(&o.records, "records", 100_000, "records in the synthetic corpus; e.g. -records 10000")
	fs.IntVar(&o.rollouts, "rollouts", 8, "rollouts per record, each with a verdict on every item; e.g. -rollouts 16")
	fs.IntVar(&o.items, "items", 10, "rubric items per record (3 to 10); e.g. -items 6")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the corpus (the same seed and sizes give the same corpus); e.g. -seed 2")
	fs.StringVar(&o.dir, "dir", "", "work directory; a corpus of the same sizes and seed there is reused (default: a new temporary directory, removed at the end unless -keep); e.g. -dir /tmp/discrimbench")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (the corpus and the commands' output)")
	fs.Var(&runs, "run", "a command to measure, repeatable; {corpus} is the run directory, {work} the work directory (default: validate {corpus} --json); e.g. -run 'distill refine {corpus} --out {work}/refined'")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `discrimbench: measure built commands over a synthetic corpus with satisfaction verdicts (no LLM).

Usage:
  go run ./internal/bench/discrim [flags]

Examples:
  go run ./internal/bench/discrim -records 100000
  go run ./internal/bench/discrim -records 10000 -dir /tmp/db -keep -run 'validate {corpus}'

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "discrimbench: unexpected argument %q (see -h)\n", fs.Arg(0))
		return nil, errors.New("bad arguments")
	}
	o.runs = runs
	if len(o.runs) == 0 {
		o.runs = []string{"validate {corpus} --json"}
	}
	check := synthcorpus.Options{Records: o.records, Rollouts: o.rollouts, Items: o.items}
	if err := check.Check(); err != nil || o.records < 1 || o.rollouts < 1 || o.items < 1 {
		fmt.Fprintf(stderr, "discrimbench: -records must be positive, -rollouts at least 1, -items from 3 to 10 (%v)\n", err)
		return nil, errors.New("bad sizes")
	}
	return o, nil
}

// ensureCorpus writes the synthetic corpus unless a finished one is there.
func ensureCorpus(dir string, o *options, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
		fmt.Fprintf(stdout, "corpus: %s (reused)\n", dir)
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing a partial corpus: %w", err)
	}
	start := time.Now()
	err := synthcorpus.Write(dir, synthcorpus.Options{Records: o.records, Rollouts: o.rollouts, Items: o.items, Seed: o.seed}, nil)
	if err != nil {
		return err
	}
	size, _ := dirSize(dir)
	fmt.Fprintf(stdout, "corpus: %s: %d records x %d rollouts x %d items, %.0f MiB, written in %.1fs\n",
		dir, o.records, o.rollouts, o.items, float64(size)/(1<<20), time.Since(start).Seconds())
	return nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// measured is one finished command.
type measured struct {
	code                  int
	wall, cpu             time.Duration
	maxRSSKiB             int64
	loadBefore, loadAfter string
	stdoutPath            string
	validateJSON          bool
}

func measure(ctx context.Context, bin string, argv []string, prefix string) (_ measured, err error) {
	if len(argv) == 0 {
		return measured{}, errors.New("an empty command")
	}
	m := measured{stdoutPath: prefix + ".stdout", loadBefore: benchkit.LoadAvg()}
	m.validateJSON = argv[0] == "validate" && strings.Contains(strings.Join(argv, " "), "--json")
	out, err := os.Create(m.stdoutPath)
	if err != nil {
		return m, fmt.Errorf("creating %s: %w", m.stdoutPath, err)
	}
	defer closeWritten(out, &err)
	errf, err := os.Create(prefix + ".stderr")
	if err != nil {
		return m, fmt.Errorf("creating %s.stderr: %w", prefix, err)
	}
	defer closeWritten(errf, &err)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, argv[0]), argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, errf
	start := time.Now()
	err = cmd.Run()
	m.wall = time.Since(start)
	m.loadAfter = benchkit.LoadAvg()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return m, fmt.Errorf("running %s: %w", argv[0], err)
	}
	m.code = cmd.ProcessState.ExitCode()
	m.cpu, m.maxRSSKiB = benchkit.Used(cmd.ProcessState)
	return m, nil
}

// closeWritten closes f, a file the command wrote, and reports its failure
// in *err unless *err holds one already.
func closeWritten(f *os.File, err *error) {
	if cerr := f.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("writing %s: %w", f.Name(), cerr)
	}
}

func (m measured) print(w io.Writer, line string) {
	fmt.Fprintf(w, "%s\n  exit %d, wall %.1fs, CPU %.1fs (user+sys), peak RSS %.0f MiB; load average before %s, after %s\n",
		line, m.code, m.wall.Seconds(), m.cpu.Seconds(), float64(m.maxRSSKiB)/1024, m.loadBefore, m.loadAfter)
	if !m.validateJSON {
		return
	}
	var rep struct {
		Corpus struct {
			Records int64 `json:"records"`
		} `json:"corpus"`
		Discrimination *struct {
			Measured  int64    `json:"measured"`
			MeanAUROC *float64 `json:"mean_auroc"`
		} `json:"discrimination"`
	}
	data, err := os.ReadFile(m.stdoutPath)
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	switch {
	case err != nil:
		fmt.Fprintf(w, "  (the JSON report does not read: %v)\n", err)
	case rep.Discrimination == nil:
		fmt.Fprintf(w, "  %d records read; no discrimination section\n", rep.Corpus.Records)
	default:
		auroc := "null"
		if a := rep.Discrimination.MeanAUROC; a != nil {
			auroc = fmt.Sprintf("%.3f", *a)
		}
		fmt.Fprintf(w, "  %d records read, %d measured by the discrimination section, mean rubric AUROC %s\n",
			rep.Corpus.Records, rep.Discrimination.Measured, auroc)
	}
}
