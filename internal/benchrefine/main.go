// Command benchrefine measures `distill refine` at scale (make
// bench-refine): it writes a synthetic corpus with internal/synthcorpus
// (kept between runs, keyed by its size), runs the built bin/distill
// refine on it as a child process, and prints the wall time, the CPU time,
// the peak RSS and the machine's load average before and after, with the
// exact command, failing (exit 1) when the wall time or the peak RSS is
// over its target.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/synthcorpus"
)

type options struct {
	bin, dir                 string
	records, rollouts, items int
	maxWall                  time.Duration
	maxRSSMiB                int64
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
	src, err := corpusFor(o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "benchrefine: %v\n", err)
		return 1
	}
	m, err := measure(ctx, o, src)
	if err != nil {
		fmt.Fprintf(stderr, "benchrefine: %v\n", err)
		return 1
	}
	m.print(stdout, o)
	if m.wall > o.maxWall || m.maxRSSKiB > o.maxRSSMiB<<10 {
		fmt.Fprintf(stderr, "benchrefine: over target (wall %s > %s or peak RSS %d MiB > %d MiB)\n", m.wall.Round(time.Millisecond), o.maxWall, m.maxRSSKiB>>10, o.maxRSSMiB)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("benchrefine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the built distill (make build)")
	fs.StringVar(&o.dir, "dir", "runs/bench-refine", "where the synthetic corpus is kept and the refined one written; e.g. -dir /tmp/br")
	fs.IntVar(&o.records, "records", 100_000, "records of the synthetic corpus; e.g. -records 10000")
	fs.IntVar(&o.rollouts, "rollouts", 8, "rollouts per record")
	fs.IntVar(&o.items, "items", 10, "rubric items per record (3-10)")
	fs.DurationVar(&o.maxWall, "max-wall", 60*time.Second, "wall-time target of the refine; e.g. -max-wall 90s")
	fs.Int64Var(&o.maxRSSMiB, "max-rss-mib", 512, "peak-RSS target of the refine, MiB")
	return o, fs.Parse(args)
}

// corpusFor is the synthetic corpus of o's size, written when missing.
func corpusFor(o *options, stdout io.Writer) (string, error) {
	src := filepath.Join(o.dir, fmt.Sprintf("src-%d-%d-%d", o.records, o.rollouts, o.items))
	if m, err := corpus.ReadManifest(src); err == nil && m.Rows == int64(o.records) {
		return src, nil
	}
	if err := os.RemoveAll(src); err != nil {
		return "", err
	}
	start := time.Now()
	err := synthcorpus.Write(src, synthcorpus.Options{Records: o.records, Rollouts: o.rollouts, Items: o.items, Seed: 1}, nil)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(stdout, "wrote the synthetic corpus %s in %s\n", src, time.Since(start).Round(time.Millisecond))
	return src, nil
}

type measured struct {
	command               string
	wall, cpu             time.Duration
	maxRSSKiB             int64
	loadBefore, loadAfter string
	summary               string
}

// measure runs bin/distill refine once into a fresh output.
func measure(ctx context.Context, o *options, src string) (measured, error) {
	dst := filepath.Join(o.dir, "refined")
	if err := os.RemoveAll(dst); err != nil {
		return measured{}, err
	}
	args := []string{"refine", src, "--out", dst}
	m := measured{command: filepath.Join(o.bin, "distill") + " " + strings.Join(args, " "), loadBefore: loadavg()}
	cmd := exec.CommandContext(ctx, filepath.Join(o.bin, "distill"), args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	m.wall = time.Since(start)
	m.loadAfter = loadavg()
	m.summary = out.String()
	if st := cmd.ProcessState; st != nil {
		m.cpu = st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			m.maxRSSKiB = ru.Maxrss
		}
	}
	if err != nil {
		return m, fmt.Errorf("%s: %w\n%s", m.command, err, m.summary)
	}
	return m, nil
}

// loadavg is the 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (m measured) print(w io.Writer, o *options) {
	fmt.Fprintf(w, "command: %s\n", m.command)
	fmt.Fprint(w, m.summary)
	fmt.Fprintf(w, "refine of %d records x %d rollouts x %d items: wall %.1fs (target %s), CPU %.1fs, peak RSS %d MiB (target %d MiB); load average %s before, %s after\n",
		o.records, o.rollouts, o.items, m.wall.Seconds(), o.maxWall, m.cpu.Seconds(), m.maxRSSKiB>>10, o.maxRSSMiB, m.loadBefore, m.loadAfter)
}
