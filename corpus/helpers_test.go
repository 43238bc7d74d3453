package corpus

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// lockHolderEnv makes the test binary act as a process that holds a run
// lock until it is killed (see TestLockReleasedWhenHolderDies).
const lockHolderEnv = "CORPUS_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHolderEnv); dir != "" {
		holdLock(dir)
	}
	code := m.Run()
	runTemplates.remove()
	os.Exit(code)
}

func holdLock(dir string) {
	r, err := Open(dir, Options{ToolVersion: "holder"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin) // until killed, or the parent goes away
	r.Close()
	os.Exit(0)
}

// waitLine reads one line from r or fails after d.
func waitLine(ctx context.Context, r io.Reader) (string, error) {
	ch := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err != nil {
			errc <- err
			return
		}
		ch <- strings.TrimSpace(line)
	}()
	select {
	case l := <-ch:
		return l, nil
	case err := <-errc:
		return "", err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// words make text that compresses like prose, not like random bytes.
var words = strings.Fields(`the of and to a in is that for it as with be by on not this are or from at which
	we let so then therefore since equation sum integer prime root square triangle angle side length area
	probability expected value function derivative integral limit sequence series modulo remainder divisor
	compute substitute simplify factor expand check verify hence thus answer boxed step case assume suppose
	x y z n k m a b c 0 1 2 3 4 5 6 7 8 9 10 12 15 16 25 36 100 = + - * / ^ ( ) \frac \sqrt \cdot \le \ge`)

// unicode samples that must survive untouched.
var unicodeBits = []string{"Ω≈ç√∫", "日本語のテキスト", "emoji 🧮🎯", "e\u0301 (combining)", "עברית", "NUL\x00inside", "  spaced  ", ""}

func prose(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
		if rng.IntN(40) == 0 {
			b.WriteString(unicodeBits[rng.IntN(len(unicodeBits))])
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

func testID(i int) string { return fmt.Sprintf("%016x", uint64(i)*0x9E3779B97F4A7C15) }

// genRecord makes a varied record: optional fields nil, zero and set; lists
// nil, empty and full; unicode text.
func genRecord(rng *rand.Rand, i int) schema.Record {
	rec := schema.Record{
		ID:      testID(i),
		Source:  []string{"gsm8k", "math", "olympiad-ΣΠ"}[i%3],
		Split:   []string{"train", "validation", "test"}[i%3],
		Problem: prose(rng, 50+rng.IntN(400)),
		Answer:  unicodeBits[i%len(unicodeBits)] + prose(rng, rng.IntN(20)),
		Style:   []string{schema.StyleSRaR, schema.StyleFactualProcess}[i%2],
		Provenance: schema.Provenance{
			RolloutModel: "qwen3-8b", DistillModel: "distiller", JudgeModel: ptr("judge"),
			RolloutTemplate: "r1", DistillTemplate: "d1", JudgeTemplate: ptr("j1"), SatisfyTemplate: ptr("s1"),
			SpecVersion: schema.SpecVersion, ToolVersion: "test",
			CreatedAt: time.UnixMilli(1_700_000_000_000 + int64(i)*1234567).UTC(),
		},
		Usage: schema.Usage{Requests: int64(i % 9), CachedRequests: int64(i % 4), PromptTokens: int64(i) * 1000,
			CompletionTokens: int64(i) * 77, CostUSD: float64(i) / 1000},
	}
	switch i % 3 {
	case 1:
		rec.Reference = ptr("")
	case 2:
		rec.Reference = ptr(prose(rng, 300))
	}
	switch i % 5 {
	case 0: // nil rubric
	case 1:
		rec.Rubric = []schema.Item{}
	default:
		for j := range 1 + rng.IntN(6) {
			it := schema.Item{ID: int32(j + 1), Type: schema.ItemTypes[j%len(schema.ItemTypes)],
				Text: prose(rng, 20+rng.IntN(120)), Weight: float64(j) - 1.5}
			it.Polarity = schema.PolarityOf(it.Type)
			if (i+j)%2 == 0 {
				it.Valid = ptr(j%3 == 0)
				it.ValidReason = ptr(prose(rng, rng.IntN(60)))
				it.SatRate = ptr(0.0)
				it.Corr = ptr(-0.25)
				it.EmpiricalValid = ptr(false)
			}
			rec.Rubric = append(rec.Rubric, it)
		}
	}
	switch i % 7 {
	case 0:
		rec.Rollouts = nil
	case 1:
		rec.Rollouts = []schema.Rollout{}
	default:
		for j := range 1 + rng.IntN(8) {
			ro := schema.Rollout{Index: int32(j), Text: prose(rng, rng.IntN(600)), ExtractedAnswer: prose(rng, rng.IntN(10)),
				Correct: j%2 == 0, FormatOK: j%3 != 0, FinishReason: []string{"stop", "length"}[j%2]}
			switch j % 3 {
			case 1:
				ro.CompletionTokens = ptr(int32(0))
			case 2:
				ro.CompletionTokens = ptr(int32(100 + j))
			}
			if j%2 == 1 {
				ro.Satisfaction = []schema.Satisfaction{{ID: 1, Satisfied: j%4 == 1, Step: int32(j)}, {ID: 2, Step: -1}}
			}
			if ro.Correct {
				rec.NCorrect++
			}
			rec.Rollouts = append(rec.Rollouts, ro)
		}
		rec.PassRate = float64(rec.NCorrect) / float64(len(rec.Rollouts))
	}
	return rec
}

// stored is rec as it reads back: lists are never nil.
func stored(rec schema.Record) schema.Record {
	if rec.Rubric == nil {
		rec.Rubric = []schema.Item{}
	}
	if rec.Rollouts == nil {
		rec.Rollouts = []schema.Rollout{}
	}
	rec.Rollouts = slices.Clone(rec.Rollouts)
	for i := range rec.Rollouts {
		if rec.Rollouts[i].Satisfaction == nil {
			rec.Rollouts[i].Satisfaction = []schema.Satisfaction{}
		}
	}
	return rec
}

func genRecords(seed uint64, from, n int) []schema.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]schema.Record, n)
	for i := range out {
		out[i] = genRecord(rng, from+i)
	}
	return out
}

func openRun(t *testing.T, dir string, opt Options) *Run {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = quietLogger()
	}
	r, err := Open(dir, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

func appendAll(t *testing.T, r *Run, recs []schema.Record) {
	t.Helper()
	for i := range recs {
		if err := r.Append(&recs[i]); err != nil {
			t.Fatalf("Append %s: %v", recs[i].ID, err)
		}
	}
}

func closeRun(t *testing.T, r *Run) {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func readAll(t *testing.T, dir string) []schema.Record {
	t.Helper()
	var out []schema.Record
	if err := ReadAll(dir, func(rec *schema.Record) error {
		out = append(out, *rec)
		return nil
	}); err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	return out
}

func shardPath(dir string, idx int) string { return filepath.Join(dir, shardsDir, shardName(idx)) }
