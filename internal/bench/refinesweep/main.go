// Command refinesweep measures how well `distill refine` finds planted
// defects and how often it claims a gain that is not there, over many
// synthetic corpora whose planting the tests never use: each seed draws its
// own proportions of item kinds, the aligned kind's rates, paraphrase noise
// and a share of records with one or two correct rollouts
// (internal/testkit/synthcorpus, no LLM). It prints three figures:
//
//   - at the target condition (judge noise 5%, 16 rollouts): the share of
//     each planted defect kind refine drops, and of aligned items it drops;
//   - over a wide grid (rollouts 8 to 64, judge noise 0 to 10%): the same,
//     by rollout count;
//   - on pure-noise corpora (every item but the ANSWER a coin flip): how
//     many seeds say the held-out AUROC of the rubric's own signal was
//     raised (the lower bound of its 95% interval above 0).
//
// Usage:
//
//	go run ./internal/bench/refinesweep -seeds 200 -records 100
//
// Its small version is a test (TestSmallSweep); the full one takes minutes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/refine"
	"github.com/rubricforge/rubricforge/schema"
)

type options struct {
	seeds, records int
	first          uint64
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
	res, err := sweep(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "refinesweep: %v\n", err)
		return 1
	}
	res.print(stdout, o)
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("refinesweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.seeds, "seeds", 200, "corpora of each kind (each seed its own planting); e.g. -seeds 50")
	fs.IntVar(&o.records, "records", 100, "records per corpus; e.g. -records 60")
	fs.Uint64Var(&o.first, "first-seed", 1000, "the first seed (seeds first, first+1, ...); e.g. -first-seed 1")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `refinesweep: planted defects found and gains claimed by distill refine over many synthetic corpora (no LLM).

Usage:
  go run ./internal/bench/refinesweep [flags]

Examples:
  go run ./internal/bench/refinesweep -seeds 200 -records 100
  go run ./internal/bench/refinesweep -seeds 20 -records 40 -first-seed 7

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 || o.seeds < 1 || o.records < 1 {
		fmt.Fprintln(stderr, "refinesweep: -seeds and -records must be at least 1, and no arguments (see -h)")
		return nil, errors.New("bad flags")
	}
	return o, nil
}

// tally counts planted items and those refine dropped, by kind, and the
// aligned ones dropped by reason.
type tally struct {
	planted, dropped [6]int64
	alignedWhy       map[string]int64
}

func (t *tally) add(o tally) {
	for k := range t.planted {
		t.planted[k] += o.planted[k]
		t.dropped[k] += o.dropped[k]
	}
	if t.alignedWhy == nil {
		t.alignedWhy = map[string]int64{}
	}
	for why, n := range o.alignedWhy {
		t.alignedWhy[why] += n
	}
}

// result is the sweep's figures.
type result struct {
	target tally
	grid   map[int]*tally // by rollouts
	// noise: seeds whose held-out change was raised, without and with
	// ANSWER items, of noiseSeeds.
	raised, raisedWith, noiseSeeds int
	noiseChanges                   []float64
}

var gridRollouts = []int{8, 16, 32, 64}

func sweep(ctx context.Context, o *options) (*result, error) {
	res := &result{grid: map[int]*tally{}}
	for _, n := range gridRollouts {
		res.grid[n] = &tally{}
	}
	for s := range o.seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seed := o.first + uint64(s)
		rng := rand.New(rand.NewPCG(seed, 41))
		res.target.add(planted(drawOptions(rng, seed, o.records, 16, 0.05)))
		n := gridRollouts[rng.IntN(len(gridRollouts))]
		res.grid[n].add(planted(drawOptions(rng, seed, o.records, n, 0.1*rng.Float64())))
		raised, with, change := pureNoise(rng, seed, o.records)
		res.noiseSeeds++
		res.noiseChanges = append(res.noiseChanges, change)
		if raised {
			res.raised++
		}
		if with {
			res.raisedWith++
		}
	}
	return res, nil
}

// drawOptions is one seed's planting: proportions of the kinds, the
// aligned kind's rates (around the simulated endpoint's 0.75 and 0.25),
// paraphrase noise, few-correct records.
func drawOptions(rng *rand.Rand, seed uint64, records, rollouts int, noise float64) synthcorpus.Options {
	mix := synthcorpus.Mix{
		synthcorpus.Aligned:    0.3 + 0.4*rng.Float64(),
		synthcorpus.Misaligned: 0.02 + 0.18*rng.Float64(),
		synthcorpus.Saturated:  0.02 + 0.18*rng.Float64(),
		synthcorpus.Dead:       0.02 + 0.18*rng.Float64(),
		synthcorpus.Redundant:  0.02 + 0.18*rng.Float64(),
		synthcorpus.Noise:      0.02 + 0.13*rng.Float64(),
	}
	if noise <= 0 {
		noise = -1 // synthcorpus: no judge noise
	}
	return synthcorpus.Options{Records: records, Rollouts: rollouts, Mix: mix, JudgeNoise: noise, Seed: seed,
		ParaphraseNoise: 0.1 * rng.Float64(), FewCorrect: 0.3 * rng.Float64(),
		Aligned: [2]float64{0.7 + 0.1*rng.Float64(), 0.2 + 0.1*rng.Float64()}}
}

// planted refines every record of the corpus o describes and counts, by
// planted kind, the items of refined records and those dropped (ANSWER
// items are never planted and not counted). A redundant item and the
// aligned item it copies are one pair: dropping either as redundant with
// the other finds the pair, and is no aligned item lost.
func planted(o synthcorpus.Options) tally {
	t := tally{alignedWhy: map[string]int64{}}
	var m discrim.Matrix
	for i := range o.Records {
		rec, kinds := o.Record(i)
		discrim.FromRecord(&m, &rec)
		d := refine.Decide(rec.ID, &m, measuredError(o))
		if d.Unmeasured != "" {
			continue
		}
		copyOf := map[int]int{} // source position -> its copy's
		for k, kind := range kinds {
			if kind == synthcorpus.Redundant {
				copyOf[synthcorpus.RedundantSource(kinds, k)] = k
			}
		}
		for k, kind := range kinds {
			if rec.Rubric[k].Type == schema.TypeAnswer {
				continue
			}
			t.planted[kind]++
			it := d.Items[k]
			switch {
			case it.Drop == "":
			case kind == synthcorpus.Redundant:
				t.dropped[kind]++
			case kind == synthcorpus.Aligned && it.Drop == refine.DropRedundant && hasCopy(copyOf, k, d, it.RedundantWith):
				t.dropped[synthcorpus.Redundant]++ // the pair found, through its source
				t.planted[kind]--
			default:
				t.dropped[kind]++
				if kind == synthcorpus.Aligned {
					t.alignedWhy[it.Drop]++
				}
			}
		}
	}
	return t
}

// hasCopy reports whether aligned item k was dropped as redundant with its
// own copy (the kept item with id keptID).
func hasCopy(copyOf map[int]int, k int, d refine.Decision, keptID int32) bool {
	c, ok := copyOf[k]
	return ok && d.Items[c].ID == keptID
}

// measuredError is refine's default options with the judge error rate
// the corpus was planted with, as a panel or people's labels would have
// measured it (--judge-error).
func measuredError(o synthcorpus.Options) refine.Options {
	opt := refine.DefaultOptions()
	opt.JudgeError = o.JudgeNoise // negative: none, as synthcorpus says it
	return opt
}

// pureNoise refines a corpus whose items but the ANSWER are coin flips and
// reports whether the held-out change of the rubric's own signal (without
// ANSWER items) was said raised, whether it was with them, and the change.
func pureNoise(rng *rand.Rand, seed uint64, records int) (raised, withAnswer bool, change float64) {
	o := synthcorpus.Options{Records: records, Rollouts: gridRollouts[rng.IntN(len(gridRollouts))], Seed: seed ^ 0x9e3779b97f4a7c15,
		Mix: synthcorpus.Mix{synthcorpus.Noise: 1}, JudgeNoise: 0.1 * rng.Float64(), FewCorrect: 0.3 * rng.Float64()}
	if o.JudgeNoise == 0 {
		o.JudgeNoise = -1
	}
	var m discrim.Matrix
	s := &refine.Summary{}
	for i := range o.Records {
		rec, _ := o.Record(i)
		discrim.FromRecord(&m, &rec)
		d := refine.Decide(rec.ID, &m, measuredError(o))
		s.Add(&d)
	}
	s.Finish()
	return s.HeldOut.WithoutAnswer.Raised, s.HeldOut.WithAnswer.Raised, s.HeldOut.WithoutAnswer.Change
}

var defectKinds = []synthcorpus.Kind{synthcorpus.Misaligned, synthcorpus.Dead, synthcorpus.Saturated, synthcorpus.Redundant, synthcorpus.Noise}

func (r *result) print(w io.Writer, o *options) {
	fmt.Fprintf(w, "refinesweep: %d seeds from %d, %d records a corpus, distill refine's default settings with the judge error rate the corpus was planted with (--judge-error)\n", o.seeds, o.first, o.records)
	fmt.Fprintln(w, "target condition (judge noise 5%, 16 rollouts; proportions, aligned rates, paraphrase noise and few-correct records drawn per seed):")
	r.target.print(w, "  ", true)
	fmt.Fprintln(w, "wide grid (judge noise 0-10% drawn per seed), by rollouts:")
	for _, n := range gridRollouts {
		if t := r.grid[n]; t.planted[synthcorpus.Aligned] > 0 {
			fmt.Fprintf(w, "  %d rollouts:\n", n)
			t.print(w, "    ", false)
		}
	}
	share := float64(r.raised) / float64(r.noiseSeeds)
	ch := slices.Clone(r.noiseChanges)
	slices.Sort(ch)
	fmt.Fprintf(w, "pure-noise corpora (rollouts 8-64, judge noise 0-10%%): held-out AUROC without ANSWER items said raised in %d of %d seeds (%.1f%%; target <= 5%%); with ANSWER items in %d\n",
		r.raised, r.noiseSeeds, 100*share, r.raisedWith)
	fmt.Fprintf(w, "  its change: median %+.3f, 5%% %+.3f, 95%% %+.3f\n", ch[len(ch)/2], ch[len(ch)*5/100], ch[min(len(ch)-1, len(ch)*95/100)])
}

// print writes the tally, with the targets when withTargets.
func (t *tally) print(w io.Writer, indent string, withTargets bool) {
	note := func(s string) string {
		if withTargets {
			return s
		}
		return ""
	}
	for _, k := range defectKinds {
		target := note(" (target >= 85%)")
		if k == synthcorpus.Noise {
			target = note(" (no target: a coin flip is kept when it happens to look aligned)")
		}
		fmt.Fprintf(w, "%s%-10s dropped %5d of %5d (%5.1f%%)%s\n", indent, k, t.dropped[k], t.planted[k], pct(t.dropped[k], t.planted[k]), target)
	}
	a := synthcorpus.Aligned
	fmt.Fprintf(w, "%s%-10s dropped %5d of %5d (%5.1f%%)%s, by reason: %s\n", indent, a, t.dropped[a], t.planted[a], pct(t.dropped[a], t.planted[a]), note(" (target <= 5%)"), reasons(t.alignedWhy))
}

// reasons lists counts by reason in name order.
func reasons(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b []byte
	for i, k := range keys {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%s %d", k, m[k])
	}
	if len(b) == 0 {
		return "none"
	}
	return string(b)
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
