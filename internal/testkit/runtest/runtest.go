// Package runtest holds the fixtures of tests that run jobs: synthetic
// problems and documents, the simulated endpoint, a small job against it,
// the records and failures a run directory holds, and the check that a
// grounded run accounted for every distinct passage (the engine's tests and
// distill plan's share it).
package runtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/schema"
)

// Problem is a synthetic problem with a known answer.
type Problem struct {
	Problem  string `json:"problem"`
	Answer   string `json:"answer"`
	Solution string `json:"solution,omitempty"`
	ID       string `json:"id,omitempty"`
	Source   string `json:"source,omitempty"`
}

// MakeProblems returns n distinct problems in varied answer notations.
func MakeProblems(n int) []Problem {
	out := make([]Problem, n)
	for i := range n {
		p := Problem{Problem: fmt.Sprintf("Problem %d: compute %d times %d, then add %d.", i, i+2, i%7+3, i%5)}
		switch i % 4 {
		case 0:
			p.Answer = fmt.Sprint((i+2)*(i%7+3) + i%5)
		case 1:
			p.Answer = fmt.Sprintf("\\frac{%d}{%d}", 2*i+1, 2*i+4)
		case 2:
			p.Answer = fmt.Sprintf("%d\\sqrt{2}", i+2)
		default:
			p.Answer = fmt.Sprintf("x^2 + %dx + 1", i+1)
		}
		if i%3 == 0 {
			p.Solution = "### Step 1: Multiply.\n### Step 2: Add.\n<answer>" + p.Answer + "</answer>"
		}
		out[i] = p
	}
	return out
}

// WriteJSONL writes rows as a JSONL input file, then the extra lines as they are.
func WriteJSONL(t testing.TB, path string, rows []Problem, extra ...string) {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, e := range extra {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// AnswersOf is the simulated endpoint's answer key for rows.
func AnswersOf(rows []Problem) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[strings.TrimSpace(r.Problem)] = r.Answer
	}
	return m
}

// StartSim serves a simulated endpoint for the test's lifetime (InProcess
// reaches it without a socket).
func StartSim(t testing.TB, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	srv, url, stop, err := sim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	serveInProcess(t, srv, url)
	return srv, url
}

// TestJob is a small, fast job against url.
func TestJob(input, out, url string) job.Job {
	j := job.DefaultJob()
	j.Input.Paths = []string{input}
	j.Out = out
	j.Rollout.BaseURL = url
	j.Rollout.Model = "simulated"
	j.Rollout.N = 4
	j.Limits.Concurrency = 32
	// Long enough that a loaded machine (tests run in parallel, two
	// packages at once) does not time out an answer of the simulated
	// endpoint: a timed-out attempt is asked again and may be answered
	// differently, and the tests that compare two runs of a job then see
	// runs that differ. Tests of hangs set their own.
	j.Limits.AttemptTimeout = 30 * time.Second
	j.Limits.MaxAttempts = 8
	j.Prices = map[string]job.Price{"simulated": {Prompt: 1, Completion: 2}}
	j.Output.ShardRows = 7
	j.Output.CheckpointInterval = time.Second
	return j
}

// ReadCorpus returns the records of a run directory by id, failing on a duplicate.
func ReadCorpus(t testing.TB, dir string) map[string]*schema.Record {
	t.Helper()
	recs := map[string]*schema.Record{}
	err := corpus.ReadAll(dir, func(r *schema.Record) error {
		if _, dup := recs[r.ID]; dup {
			return fmt.Errorf("id %s appears twice in the shards", r.ID)
		}
		c := *r
		recs[r.ID] = &c
		return nil
	})
	if err != nil {
		t.Fatalf("reading corpus: %v", err)
	}
	return recs
}

// ReadFailures returns the ids in failures.jsonl with their last line.
func ReadFailures(t testing.TB, dir string) map[string]corpus.Failure {
	t.Helper()
	out := map[string]corpus.Failure{}
	b, err := os.ReadFile(filepath.Join(dir, "failures.jsonl"))
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var f corpus.Failure
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("failures.jsonl line %d: %v", i+1, err)
		}
		out[f.ID] = f
	}
	return out
}

// TextLogger logs to w as text, at every level.
func TextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// SyncBuffer is a strings.Builder safe for concurrent writers (a log sink).
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// DocTopic is the topic of the kth synthetic document.
func DocTopic(k int) string {
	topics := [...]string{"capacitor", "flywheel", "turbine", "membrane", "catalyst", "spectrometer", "waveguide", "reactor", "compressor", "inverter"}
	return topics[k%len(topics)]
}

// WriteDocs writes n documents of several paragraphs under dir (some in
// subdirectories, some long enough for several passages), plus one
// document that repeats another's text (its passages are duplicates) and
// one that is not UTF-8.
func WriteDocs(t testing.TB, dir string, n int) {
	t.Helper()
	for i := range n {
		topic := DocTopic(i)
		var b strings.Builder
		fmt.Fprintf(&b, "# Notes on the %s, part %d\n\n", topic, i)
		for p := range 2 + i%5 {
			fmt.Fprintf(&b, "The %s stage %d regulates pressure because the upstream coupling transfers thermal energy into mechanical motion. "+
				"Operators measure efficiency by comparing delivered output with consumed input, and the difference appears as dissipation in bearings and seals. "+
				"Therefore calibration of the %s matters whenever temperature drifts beyond the nominal envelope of document %d.\n\n", topic, p, topic, i)
		}
		name := fmt.Sprintf("doc-%02d.md", i)
		if i%3 == 0 {
			name = filepath.Join("sub", fmt.Sprintf("doc-%02d.txt", i))
		}
		WriteFile(t, filepath.Join(dir, name), b.String())
	}
	first, err := os.ReadFile(filepath.Join(dir, "sub", "doc-00.txt"))
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(dir, "zz-copy.txt"), string(first))
	WriteFile(t, filepath.Join(dir, "zz-bad.txt"), "caf\xe9 au lait\n")
}

// GroundedTestJob is a grounded job over input with every stage on.
func GroundedTestJob(input, out, url string) job.Job {
	j := TestJob(input, out, url)
	j.Style = schema.StyleGrounded
	j.Grounded.PassageChars = 700
	j.Grounded.QuestionsPerPassage = 2
	j.Judge.Enabled = true
	j.Empirical.Enabled = true
	j.Rollout.N = 3
	return j
}

// WriteFile writes text to path, making its directory.
func WriteFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BatchJob is TestJob with the given stages in batch mode, polling fast.
func BatchJob(input, out, url string, stages ...string) job.Job {
	j := TestJob(input, out, url)
	j.Judge.Enabled = true
	j.Empirical.Enabled = true
	j.Batch.PollInterval = 10 * time.Millisecond
	for _, s := range stages {
		j.BatchSections()[s].Mode = job.ModeBatch
	}
	return j
}

// BatchSetup writes n problems and serves a simulated endpoint with cfg
// for a BatchJob over them with stages in batch mode, its run directory in
// a temporary directory.
func BatchSetup(t *testing.T, n int, cfg sim.Config, stages ...string) (*sim.Server, job.Job, []Problem) {
	t.Helper()
	dir := t.TempDir()
	rows := MakeProblems(n)
	input := filepath.Join(dir, "in.jsonl")
	WriteJSONL(t, input, rows)
	srv, url := BatchSim(t, rows, cfg)
	return srv, BatchJob(input, filepath.Join(dir, "run"), url, stages...), rows
}

// BatchSim is a simulated endpoint with a Batch API that answers a batch
// after turnaround.
func BatchSim(t *testing.T, rows []Problem, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	cfg.Answers = AnswersOf(rows)
	if cfg.BatchTurnaround == 0 {
		cfg.BatchTurnaround = 30 * time.Millisecond
	}
	return StartSim(t, cfg)
}

// ChangedAnswers is rows with the answers of the first n changed: a copy of
// the input that is not the input.
func ChangedAnswers(rows []Problem, n int) []Problem {
	out := append([]Problem(nil), rows...)
	for i := range n {
		out[i].Answer += "1"
	}
	return out
}

// Fixture is the usual test setup: n problems in a JSONL file, a simulated
// endpoint that knows their answers, and a small job against it.
type Fixture struct {
	Dir, Input string
	Rows       []Problem
	Srv        *sim.Server
	URL        string
	Job        job.Job
}

// NewFixture writes n problems under a temporary directory and serves the
// simulated endpoint for them; Job runs into Dir/run.
func NewFixture(t testing.TB, n int, cfg sim.Config) *Fixture {
	t.Helper()
	f := &Fixture{Dir: t.TempDir(), Rows: MakeProblems(n)}
	f.Input = filepath.Join(f.Dir, "in.jsonl")
	WriteJSONL(t, f.Input, f.Rows)
	cfg.Answers = AnswersOf(f.Rows)
	f.Srv, f.URL = StartSim(t, cfg)
	f.Job = TestJob(f.Input, filepath.Join(f.Dir, "run"), f.URL)
	return f
}

// GroundedCounts are the counts of a run's report that
// CheckGroundedAccounted reads.
type GroundedCounts struct {
	Unique, Done, Failed, LeftOut, Pending int64
	FailuresByStage                        map[string]int64
}

// DistinctUnits reads the passages a job's input holds, duplicates left out.
func DistinctUnits(t testing.TB, j job.Job) []source.Problem {
	t.Helper()
	var out []source.Problem
	seen := map[string]bool{}
	err := source.ReadUnits(context.Background(), source.SpecOf(&j), func(p source.Problem) error {
		if !seen[p.DocHash] {
			seen[p.DocHash] = true
			out = append(out, p)
		}
		return nil
	}, func(*source.InputError) {})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CheckGroundedAccounted: every distinct passage is exactly one record or
// one failure line, the report's counts add up, and every record holds
// what the grounded style promises.
func CheckGroundedAccounted(t testing.TB, j job.Job, p GroundedCounts) map[string]*schema.Record {
	t.Helper()
	units := DistinctUnits(t, j)
	recs, fails := ReadCorpus(t, j.Out), ReadFailures(t, j.Out)
	for _, u := range units {
		_, done := recs[u.ID]
		_, failed := fails[u.ID]
		if done == failed {
			t.Errorf("passage %s: in shards=%v, in failures=%v; want exactly one", u.ID, done, failed)
		}
	}
	if len(recs)+len(fails) != len(units) {
		t.Errorf("%d records + %d failures != %d distinct passages", len(recs), len(fails), len(units))
	}
	if p.Unique != int64(len(units)) || p.Unique != p.Done+p.Failed+p.LeftOut+p.Pending || p.Pending != 0 || int(p.Done) != len(recs) {
		t.Errorf("report counts %+v; %d distinct passages, %d records", p, len(units), len(recs))
	}
	if _, ok := p.FailuresByStage[job.StageQuality]; ok {
		t.Errorf("passages left out by the quality checks counted as failures: %v", p.FailuresByStage)
	}
	gs := j.Grounded
	for id, r := range recs {
		g := r.Grounded
		if g == nil || r.Style != schema.StyleGrounded || g.PassageID != id || g.DocHash != source.ContentHash(g.Passage) || r.Split == "" {
			t.Fatalf("record %s: style %q, payload %+v", id, r.Style, g)
		}
		if utf8.RuneCountInString(g.Passage) > gs.PassageChars || g.Analysis.Genre == "" || len(g.Analysis.Concepts) == 0 {
			t.Errorf("record %s: passage of %d characters, analysis %+v", id, utf8.RuneCountInString(g.Passage), g.Analysis)
		}
		if len(g.Questions) != gs.QuestionsPerPassage {
			t.Errorf("record %s: %d questions, want %d", id, len(g.Questions), gs.QuestionsPerPassage)
		}
		for _, q := range g.Questions {
			rules := schema.QualityRules{MinCriteria: gs.MinCriteria, MinTotalWeight: gs.MinTotalWeight, MaxCopiedWords: gs.MaxCopiedWords}
			if problems := schema.QualityProblems(q, g.Passage, rules); len(problems) > 0 {
				t.Errorf("record %s question %d fails the quality checks: %q", id, q.Index, problems)
			}
			for _, c := range q.Criteria {
				if j.Judge.Enabled && c.Valid == nil {
					t.Errorf("record %s criterion %s not judged", id, c.ID)
				}
				if j.Grounded.Enrich && (len(c.ExpectedKeywords) < job.EnrichedKeywords || len(c.ExpectedConcepts) < job.EnrichedConcepts) {
					t.Errorf("record %s criterion %s still thin after enrichment: %+v", id, c.ID, c)
				}
			}
			if j.Empirical.Enabled && len(q.Answers) != j.Rollout.N {
				t.Errorf("record %s question %d: %d closed-book answers, want %d", id, q.Index, len(q.Answers), j.Rollout.N)
			}
			if open := job.OpenBookOn(&j); open && len(q.OpenBookAnswers) != j.Rollout.N || !open && len(q.OpenBookAnswers) != 0 {
				t.Errorf("record %s question %d: %d open-book answers with empirical.open_book %v", id, q.Index, len(q.OpenBookAnswers), open)
			}
		}
	}
	return recs
}
