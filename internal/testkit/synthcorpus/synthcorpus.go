// Package synthcorpus writes synthetic math-style corpora, with no LLM: a
// run directory of N records × R rollouts × I items with satisfaction
// verdicts drawn from items of planted kinds (aligned, misaligned,
// saturated, dead, redundant, noise) under judge noise, through the corpus
// package, one record in memory at a time. Benchmarks of validate's
// discrimination section and of `distill refine` read it, and tests learn
// each item's planted kind from the callback of [Write] (it is never in the
// corpus).
//
// Every record is a function of the options' seed and its position, so the
// same options give the same corpus, and a record can be made alone
// ([Options.Record]).
package synthcorpus

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// Kind is an item's planted kind.
type Kind int

// The planted kinds. Aligned items are satisfied on the good side more by
// correct rollouts, misaligned ones more by flawed rollouts; saturated
// items always, dead items never; a redundant item repeats the verdicts of
// an earlier aligned item of its record (its text is that item's, reworded);
// noise items are a coin flip. ANSWER items are satisfied exactly by the
// correct rollouts (before judge noise) and counted as Aligned.
const (
	Aligned Kind = iota
	Misaligned
	Saturated
	Dead
	Redundant
	Noise
	nKinds
)

// String names the kind.
func (k Kind) String() string {
	return [...]string{"aligned", "misaligned", "saturated", "dead", "redundant", "noise"}[k]
}

// Mix is the share of each planted kind among the items that are not
// ANSWER items; shares need not sum to 1 (they are normalized).
type Mix [nKinds]float64

// DefaultMix: half aligned, a tenth of each other kind.
var DefaultMix = Mix{Aligned: 0.5, Misaligned: 0.1, Saturated: 0.1, Dead: 0.1, Redundant: 0.1, Noise: 0.1}

// Options say what corpus to write. Zero fields take the defaults.
type Options struct {
	Records  int // default 1000
	Rollouts int // per record; default 8
	Items    int // per record, ANSWER included for srar; default 10 (factual_process: 3 to 10)
	// Style is schema.StyleSRaR, schema.StyleFactualProcess, or "" for
	// both: every tenth record factual_process.
	Style string
	Mix   Mix // default DefaultMix
	// JudgeNoise is the chance that a verdict is flipped; default 0.05, <0 none.
	JudgeNoise float64
	// ParaphraseNoise is the chance a redundant item's verdict is flipped
	// again, beyond its source's (two wordings a judge grades apart; they
	// share the judge's errors otherwise).
	ParaphraseNoise float64
	// FewCorrect is the share of records with one or two correct rollouts
	// (the others draw how many are correct uniformly).
	FewCorrect float64
	// Aligned are the aligned kind's good-side rates on correct and on
	// flawed rollouts (misaligned items swap them); zero: 0.85 and 0.25
	// (misaligned: 0.2 and 0.8).
	Aligned [2]float64
	// NoVerdicts writes the records as a run without the empirical stage
	// would: no satisfaction verdicts, no empirical figures.
	NoVerdicts bool
	Seed       uint64
	ShardRows  int // default 5000
}

func (o Options) withDefaults() Options {
	if o.Records == 0 {
		o.Records = 1000
	}
	if o.Rollouts == 0 {
		o.Rollouts = 8
	}
	if o.Items == 0 {
		o.Items = 10
	}
	if o.Mix == (Mix{}) {
		o.Mix = DefaultMix
	}
	switch {
	case o.JudgeNoise == 0:
		o.JudgeNoise = 0.05
	case o.JudgeNoise < 0:
		o.JudgeNoise = 0
	}
	if o.ShardRows == 0 {
		o.ShardRows = 5000
	}
	return o
}

// Check says what is wrong with o, naming the field.
func (o Options) Check() error {
	o = o.withDefaults()
	switch {
	case o.Records < 0:
		return fmt.Errorf("synthcorpus: Records is %d; it must not be negative", o.Records)
	case o.Rollouts < 1:
		return fmt.Errorf("synthcorpus: Rollouts is %d; it must be at least 1", o.Rollouts)
	case o.Items < 3 || o.Items > 10:
		return fmt.Errorf("synthcorpus: Items is %d; it must be from 3 to 10 (a factual_process rubric's range)", o.Items)
	case o.Style != "" && o.Style != schema.StyleSRaR && o.Style != schema.StyleFactualProcess:
		return fmt.Errorf("synthcorpus: Style %q is not %q or %q", o.Style, schema.StyleSRaR, schema.StyleFactualProcess)
	}
	for k, w := range o.Mix {
		if w < 0 {
			return fmt.Errorf("synthcorpus: Mix[%s] is %g; shares must not be negative", Kind(k), w)
		}
	}
	return nil
}

// Write writes the corpus as a new run directory dir. planted, when not
// nil, is told each record's id and its items' planted kinds in item order.
func Write(dir string, o Options, planted func(id string, kinds []Kind)) error {
	if err := o.Check(); err != nil {
		return err
	}
	o = o.withDefaults()
	run, err := corpus.Open(dir, corpus.Options{ShardRows: o.ShardRows, ToolVersion: "synthcorpus", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("synthcorpus: opening the run directory %s: %w", dir, err)
	}
	run.SetFingerprint(fmt.Sprintf("synth-%016x", o.Seed))
	for i := range o.Records {
		rec, kinds := o.Record(i)
		if err := run.Append(&rec); err != nil {
			_ = run.Abandon()
			return fmt.Errorf("synthcorpus: writing record %d of %s: %w", i, dir, err)
		}
		if planted != nil {
			planted(rec.ID, kinds)
		}
	}
	if err := run.Close(); err != nil {
		return fmt.Errorf("synthcorpus: closing %s: %w", dir, err)
	}
	return nil
}

// Record is the i-th record of the corpus o describes, and its items'
// planted kinds.
func (o Options) Record(i int) (schema.Record, []Kind) {
	o = o.withDefaults()
	rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
	style := o.Style
	if style == "" {
		style = schema.StyleSRaR
		if i%10 == 7 {
			style = schema.StyleFactualProcess
		}
	}
	rec := baseRecord(i, style, o.Seed)
	kinds := plantKinds(rng, style, o.Items, o.Mix)
	rec.Rubric = rubric(rng, i, style, kinds)
	correct := correctness(rng, o.Rollouts, o.FewCorrect)
	rec.Rollouts = make([]schema.Rollout, o.Rollouts)
	for j := range rec.Rollouts {
		rec.Rollouts[j] = rollout(j, correct[j], i)
		if correct[j] {
			rec.NCorrect++
		}
	}
	rec.PassRate = float64(rec.NCorrect) / float64(o.Rollouts)
	if o.NoVerdicts {
		rec.Provenance.EmpiricalModel, rec.Provenance.SatisfyTemplate, rec.Provenance.Alpha = nil, nil, nil
		return rec, kinds
	}
	addVerdicts(rng, &rec, kinds, correct, o)
	return rec, kinds
}

func baseRecord(i int, style string, seed uint64) schema.Record {
	judge, judgeTmpl, satisfy, alpha := "sim-judge", "j1", "s1", 0.2
	return schema.Record{
		ID: fmt.Sprintf("%016x", seed*1_000_003+uint64(i)), Source: "synthetic",
		Split:   []string{"train", "train", "train", "validation", "test"}[i%5],
		Problem: fmt.Sprintf("Synthetic problem %d: compute the value.", i), Answer: fmt.Sprint(i), Style: style,
		Provenance: schema.Provenance{
			RolloutModel: "synth-rollout", DistillModel: "synth-distill", JudgeModel: &judge, EmpiricalModel: &judge,
			RolloutTemplate: "r1", DistillTemplate: "d1", JudgeTemplate: &judgeTmpl, SatisfyTemplate: &satisfy, Alpha: &alpha,
			JobFingerprint: fmt.Sprintf("synth-%016x", seed), SpecVersion: schema.SpecVersion, ToolVersion: "synthcorpus",
			CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second),
		},
		Usage: schema.Usage{Requests: 12, PromptTokens: 9000, CompletionTokens: 4000},
	}
}

// plantKinds draws the kinds of n items: srar's last item is its ANSWER
// (aligned); a redundant item needs an earlier aligned item, else it is
// aligned itself.
func plantKinds(rng *rand.Rand, style string, n int, mix Mix) []Kind {
	total := 0.0
	for _, w := range mix {
		total += w
	}
	kinds := make([]Kind, n)
	free := n
	if style == schema.StyleSRaR {
		free = n - 1
		kinds[n-1] = Aligned
	}
	hasAligned := false
	for k := range free {
		kinds[k] = draw(rng, mix, total)
		if kinds[k] == Redundant && !hasAligned {
			kinds[k] = Aligned
		}
		hasAligned = hasAligned || kinds[k] == Aligned
	}
	return kinds
}

func draw(rng *rand.Rand, mix Mix, total float64) Kind {
	u := rng.Float64() * total
	for k, w := range mix {
		if u < w {
			return Kind(k)
		}
		u -= w
	}
	return Aligned
}

// correctness draws how many rollouts are correct (with chance few one or
// two, else 0 to n uniformly) and which.
func correctness(rng *rand.Rand, n int, few float64) []bool {
	c := make([]bool, n)
	k := rng.IntN(n + 1)
	if few > 0 && rng.Float64() < few {
		k = min(n, 1+rng.IntN(2))
	}
	for _, j := range rng.Perm(n)[:k] {
		c[j] = true
	}
	return c
}

func rollout(j int, correct bool, i int) schema.Rollout {
	tokens := int32(200 + 17*j + i%50)
	answer := "wrong"
	if correct {
		answer = fmt.Sprint(i)
	}
	return schema.Rollout{Index: int32(j), Text: fmt.Sprintf("### Step 1: work.\nThe answer is \\boxed{%s}.", answer),
		ExtractedAnswer: answer, Correct: correct, FormatOK: true, FinishReason: "stop", CompletionTokens: &tokens}
}
