// Package corpusfix writes small corpora with known figures as run
// directories, for the tests of audit and rejudge: well-formed records of
// both math styles with judged items and verdicts on every rollout, and
// records breaking one structural rule each.
package corpusfix

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

func ptr[T any](v T) *T { return &v }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// SRaRRubric is a well-formed SRaR rubric whose type counts vary with i.
func SRaRRubric(i int) []schema.Item {
	var items []schema.Item
	add := func(t, text string) {
		items = append(items, schema.Item{ID: int32(len(items) + 1), Type: t, Text: text, Weight: 1, Polarity: schema.PolarityOf(t)})
	}
	for k := range 3 + i%3 {
		add(schema.TypeSuggest, fmt.Sprintf("Problem %d, step %d: reduce the expression before expanding.", i, k+1))
	}
	for k := range i % 3 {
		add(schema.TypePitfall, fmt.Sprintf("Problem %d: drops the sign in term %d.", i, k+1))
	}
	for k := range i % 2 {
		add(schema.TypeBonus, fmt.Sprintf("Problem %d: checks the result by substitution (%d).", i, k+1))
	}
	add(schema.TypeAnswer, fmt.Sprintf("The final answer is %d.", i))
	return items
}

// FPRubric is a well-formed factual/process rubric.
func FPRubric(i int) []schema.Item {
	return []schema.Item{
		{ID: 1, Type: schema.TypeFactual, Text: fmt.Sprintf("States that the answer is %d.", i), Weight: 5, Polarity: 1},
		{ID: 2, Type: schema.TypeProcess, Text: "Sets up the equation from the conditions.", Weight: 3, Polarity: 1},
		{ID: 3, Type: schema.TypeProcess, Text: "Solves the equation for the unknown.", Weight: 2, Polarity: 1},
	}
}

// Record builds a consistent record i of style: judged items, four
// rollouts with satisfaction verdicts and the empirical figures they give.
// editRubric runs before the rollouts are made (so verdicts follow the
// rubric); edit runs last, to break something on purpose.
func Record(i int, style string, editRubric func([]schema.Item) []schema.Item, edit func(*schema.Record)) schema.Record {
	rec := schema.Record{
		ID: fmt.Sprintf("p%03d", i), Source: "fixture", Split: []string{"train", "train", "train", "validation"}[i%4],
		Problem: fmt.Sprintf("Problem %d: compute the value.", i), Answer: fmt.Sprint(i), Style: style,
		Provenance: schema.Provenance{
			RolloutModel: "sim-rollout", DistillModel: "sim-distill", JudgeModel: ptr("sim-judge"), EmpiricalModel: ptr("sim-judge"),
			RolloutTemplate: "r1", DistillTemplate: "d1", JudgeTemplate: ptr("j1"), SatisfyTemplate: ptr("s1"), Alpha: ptr(0.2),
			JobFingerprint: []string{"fp-aaaa", "fp-aaaa", "fp-aaaa", "fp-bbbb"}[i%4], SpecVersion: schema.SpecVersion, ToolVersion: "test",
			CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute),
		},
		Usage: schema.Usage{Requests: 7, CachedRequests: int64(i % 2), PromptTokens: 3000 + int64(i)*10, CompletionTokens: 1500 + int64(i)*5, CostUSD: 0.001 * float64(i%5+1)},
	}
	if style == schema.StyleFactualProcess {
		rec.Rubric = FPRubric(i)
	} else {
		rec.Rubric = SRaRRubric(i)
	}
	if editRubric != nil {
		rec.Rubric = editRubric(rec.Rubric)
	}
	for k := range rec.Rubric {
		it := &rec.Rubric[k]
		if i%10 != 9 { // every tenth record was not judged
			it.Valid = ptr((i*7+k)%9 != 4)
			it.ValidReason = ptr("reason")
		}
	}
	AddRollouts(&rec, i)
	if edit != nil {
		edit(&rec)
	}
	return rec
}

// AddRollouts gives rec four rollouts, 1 + i%3 of them correct, with
// verdicts on every item and the stored empirical figures they give.
func AddRollouts(rec *schema.Record, i int) {
	correct := make([]float64, 4)
	for j := range 4 {
		ro := schema.Rollout{Index: int32(j), Text: "### Step 1: ...", Correct: j < 1+i%3, FormatOK: j != 2 || i%4 != 0,
			FinishReason: "stop", CompletionTokens: ptr(int32(100*(j+1) + i))}
		if i%5 == 0 && j == 3 {
			ro.FinishReason = "length"
		}
		if ro.Correct {
			rec.NCorrect++
			correct[j] = 1
		}
		for k, it := range rec.Rubric {
			ro.Satisfaction = append(ro.Satisfaction, schema.Satisfaction{ID: it.ID, Satisfied: (i+j*k+k)%3 != 0 == ro.Correct, Step: 1})
		}
		rec.Rollouts = append(rec.Rollouts, ro)
	}
	rec.PassRate = float64(rec.NCorrect) / 4
	for k := range rec.Rubric {
		sat := make([]float64, 4)
		for j := range 4 {
			if rec.Rollouts[j].Satisfaction[k].Satisfied {
				sat[j] = 1
			}
		}
		v := reward.ItemValidity(sat, correct, rec.Rubric[k].Polarity, 0.2)
		rec.Rubric[k].SatRate, rec.Rubric[k].Corr, rec.Rubric[k].EmpiricalValid = v.SatRate, v.Corr, v.Valid
	}
}

// Violating lists records that break one rule each (and what that drags
// along), by the rule they are for.
func Violating(start int) []schema.Record {
	srar := func(i int, edit func(*schema.Record)) schema.Record {
		return Record(i, schema.StyleSRaR, nil, edit)
	}
	items := func(i int, style string, edit func([]schema.Item) []schema.Item) schema.Record {
		return Record(i, style, edit, nil)
	}
	i := start
	next := func() int { i++; return i }
	return []schema.Record{
		srar(next(), func(r *schema.Record) { r.Provenance.SpecVersion = "1" }),
		srar(next(), func(r *schema.Record) { r.Problem = "  \n" }),
		srar(next(), func(r *schema.Record) { r.Answer = "" }),
		items(next(), "freeform", nil),
		items(next(), schema.StyleSRaR, func([]schema.Item) []schema.Item { return nil }),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item { it[2].ID = 9; return it }),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item { it[1].Type = schema.TypeFactual; return it }),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item { it[0].Text = " \t"; return it }),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item { it[1].Text = "first line\nsecond line"; return it }),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item { it[2].Text = "  " + strings.ToUpper(it[0].Text); return it }),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item {
			it[len(it)-2].Type, it[len(it)-2].Polarity = schema.TypePitfall, 1
			return it
		}),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item { it[0].Weight = 0; return it }),
		items(next(), schema.StyleFactualProcess, func(it []schema.Item) []schema.Item { it[1].Weight = 2.5; return it }),
		srar(next(), func(r *schema.Record) { r.Rubric[0].SatRate = ptr(1.5) }),
		srar(next(), func(r *schema.Record) { r.Rubric[1].Corr = ptr(-2.0) }),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item {
			for k := range it {
				if it[k].Type == schema.TypeSuggest {
					it[k].Type = schema.TypeBonus
				}
			}
			return it
		}),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item {
			return append(it, schema.Item{ID: int32(len(it) + 1), Type: schema.TypeAnswer, Text: "The answer is stated once more.", Weight: 1, Polarity: 1})
		}),
		items(next(), schema.StyleSRaR, func(it []schema.Item) []schema.Item {
			for len(it) < 14 {
				it = append(it[:len(it)-1], schema.Item{ID: int32(len(it)), Type: schema.TypeSuggest, Text: fmt.Sprintf("Extra step %d.", len(it)), Weight: 1, Polarity: 1}, it[len(it)-1])
				it[len(it)-1].ID = int32(len(it))
			}
			return it
		}),
		items(next(), schema.StyleFactualProcess, func(it []schema.Item) []schema.Item { return it[:2] }),
		srar(next(), func(r *schema.Record) { r.NCorrect++ }),
		srar(next(), func(r *schema.Record) { r.Rollouts[1].Index = 0 }),
		srar(next(), func(r *schema.Record) { r.Rollouts[2].Satisfaction = r.Rollouts[2].Satisfaction[1:] }),
		srar(next(), func(r *schema.Record) { r.Rubric[1].SatRate = ptr(*r.Rubric[1].SatRate + 0.25) }),
	}
}

// Records are 30 good records (srar and factual_process) and one
// breaking each rule.
func Records() []schema.Record {
	var recs []schema.Record
	for i := range 30 {
		style := schema.StyleSRaR
		if i%10 == 7 {
			style = schema.StyleFactualProcess
		}
		recs = append(recs, Record(i, style, nil, nil))
	}
	return append(recs, Violating(100)...)
}

// WriteRun writes recs as a run directory with shards of shardRows.
func WriteRun(t testing.TB, dir string, recs []schema.Record, shardRows int) {
	t.Helper()
	r, err := corpus.Open(dir, corpus.Options{ShardRows: shardRows, ToolVersion: "test", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	r.SetFingerprint("fp-aaaa")
	for k := range recs {
		if err := r.Append(&recs[k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("distill: {max_items: 12}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// AddDuplicateShard lists in the run at dir a shard holding a copy of rec,
// as a hand-edited or merged manifest would (a resume refuses to adopt a
// shard whose ids are already there, so the manifest is edited directly).
func AddDuplicateShard(t testing.TB, dir string, rec schema.Record) {
	t.Helper()
	other := t.TempDir()
	WriteRun(t, other, []schema.Record{rec}, 10)
	om, err := corpus.ReadManifest(other)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(other, filepath.FromSlash(om.Shards[0].File)))
	if err != nil {
		t.Fatal(err)
	}
	shard := om.Shards[0]
	shard.File, shard.IDsXXHash64, shard.ModTimeNS = "shards/part-00042.parquet", "", 0
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(shard.File)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := corpus.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Shards = append(m.Shards, shard)
	m.Rows += shard.Rows
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, corpus.ManifestName), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Run is the golden fixture: a run directory of Records in
// shards of 16, plus an adopted shard that repeats record p005.
func Run(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	RunAt(t, dir)
	return dir
}

// RunAt writes the golden fixture (Run's) as the run directory dir.
func RunAt(t testing.TB, dir string) {
	t.Helper()
	recs := Records()
	WriteRun(t, dir, recs, 16)
	AddDuplicateShard(t, dir, recs[5])
}
