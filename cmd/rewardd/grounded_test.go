package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/cmd/rewardd/internal/server"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

const (
	raftPassage = "Raft elects a leader for each term. A candidate becomes leader once a majority of the servers grant it their vote, " +
		"and a server grants at most one vote per term. The leader then appends client commands to its log and replicates them; " +
		"an entry is committed once it is stored on a majority of servers."
	raftQuestion = "How does a consensus protocol ensure at most one leader per term, and when is a replicated log entry safe to apply?"
)

// groundedCorpus writes a run directory of two passage records (three
// questions) with the corpus writer, as the pipeline would.
func groundedCorpus(t *testing.T) (string, []schema.Record) {
	t.Helper()
	valid := true
	crit := func(id, name string, w float64, keywords ...string) schema.Criterion {
		return schema.Criterion{ID: id, Weight: w, Name: name, Description: "Explains " + name + ".", RequiredElements: []string{name},
			ScoringGuide: "Full weight for a correct account of " + name + ".", VerificationMethod: "Compare with the passage.",
			ExpectedKeywords: keywords, ExpectedConcepts: []string{name}, Valid: &valid}
	}
	prov := schema.Provenance{DistillModel: "simulated", SpecVersion: schema.SpecVersion, ToolVersion: "test", JobFingerprint: "fp-grounded",
		CreatedAt: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	recs := []schema.Record{
		{ID: "5a5a5a5a5a5a5a5a", Source: "notes", Split: "train", Style: schema.StyleGrounded, Provenance: prov, Grounded: &schema.Grounded{
			DocID: "raft.md", PassageID: "raft.md#0", Title: "Raft", Passage: raftPassage, DocHash: "1111222233334444",
			Analysis: schema.Analysis{Genre: "tutorial", Contribution: "leader election", Concepts: []string{"term", "majority"}, Depth: "intermediate", ReasoningMode: "causal"},
			Questions: []schema.GroundedQuestion{
				{Index: 0, Question: raftQuestion, Rationale: "Election safety and commitment.", Criteria: []schema.Criterion{
					crit("vote", "one vote per term", 4, "vote", "term"), crit("majority", "majority quorum", 3, "majority"), crit("commit", "commit rule", 3, "majority", "stored")}},
				{Index: 1, Question: "What must a candidate collect before it may act as leader?", Rationale: "Quorum.", Criteria: []schema.Criterion{
					crit("votes", "votes of a majority", 2, "majority")}},
			}}},
		{ID: "6b6b6b6b6b6b6b6b", Source: "notes", Split: "train", Style: schema.StyleGrounded, Provenance: prov, Grounded: &schema.Grounded{
			DocID: "wal.md", PassageID: "wal.md#0", Title: "WAL", Passage: "A write-ahead log is forced to disk before the pages it describes.", DocHash: "5555666677778888",
			Analysis: schema.Analysis{Genre: "tutorial", Depth: "introductory", ReasoningMode: "causal"},
			Questions: []schema.GroundedQuestion{
				{Index: 0, Question: "Why is a log forced to disk before the pages it describes?", Rationale: "Ordering.", Criteria: []schema.Criterion{
					crit("order", "write ordering", 1, "before")}},
			}}},
	}
	dir := filepath.Join(t.TempDir(), "run")
	w, err := corpus.Open(dir, corpus.Options{ShardRows: 1, ToolVersion: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		rec := recs[i]
		if err := w.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, recs
}

// TestGroundedEndToEnd: grounded records written as a corpus, exported for
// verl, served by the real rewardd over the export and scored through
// /v1/score, /get_reward and /score against the simulated judge, with the
// passage from the corpus; the verl prompt never holds the passage; the
// run directory and a jsonl export load the same questions.
func TestGroundedEndToEnd(t *testing.T) {
	t.Parallel()
	run, recs := groundedCorpus(t)
	export := filepath.Join(t.TempDir(), "verl")
	if _, err := corpus.Export(context.Background(), run, corpus.ExportOptions{Format: corpus.FormatVerl, Out: export, ToolVersion: "test", Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	files, err := corpus.Shards(export)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, f := range files {
		if err := corpus.Scan(f, func(r *corpus.VerlRow) error {
			rows++
			for _, m := range r.Prompt {
				for _, rec := range recs {
					if strings.Contains(m.Content, rec.Grounded.Passage) || strings.Contains(m.Content, "majority of the servers grant") {
						t.Errorf("row %s: the prompt holds the passage: %q", r.ExtraInfo.ID, m.Content)
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if rows != 3 {
		t.Fatalf("the verl export has %d rows, want one per question (3)", rows)
	}

	for _, src := range []string{run, export} {
		x, stats, err := server.LoadIndex(src, nil)
		if err != nil || x.Len() != 3 || stats.Skipped != 0 {
			t.Fatalf("LoadIndex(%s): %d questions, %+v, %v; want 3", src, x.Len(), stats, err)
		}
	}

	// The judge sees the passage: the simulated endpoint behind a check
	// that every grounded judge request carries the corpus passage.
	simulator := sim.New(sim.Config{})
	seen := make(chan string, 64)
	judge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Messages []struct{ Content string } }
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if json.Unmarshal(raw, &body) == nil && len(body.Messages) > 1 {
			seen <- body.Messages[1].Content // before the answer, so it is in when the score is
		}
		simulator.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { judge.Close(); simulator.Close() })
	c := startChild(t, "--corpus", export, "--addr", "127.0.0.1:0", "--judge-base-url", judge.URL+"/v1",
		"--judge-model", "simulated", "--judge-api-key-env", "REWARDD_TEST_JUDGE_KEY", "--token-env", "REWARDD_TEST_TOKEN")

	qid := schema.QuestionID(recs[0].ID, 0)
	response := "Each server votes once per term, so two leaders cannot both win a majority. " +
		sim.ScoresMarker(map[string]float64{"vote": 4, "majority": 2}, "vote", "majority")
	const want = 6.0 / 10

	code, out := c.post(t, "/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
		{"problem_id": qid, "response": response},
		{"question": raftQuestion, "response": response},
		{"prompt": []map[string]string{{"role": "user", "content": raftQuestion}}, "response": "I do not know."},
	}}))
	var v1 struct{ Results []reward.Result }
	if err := json.Unmarshal(out, &v1); code != http.StatusOK || err != nil || len(v1.Results) != 3 {
		t.Fatalf("POST /v1/score: %d %s (%v)", code, out, err)
	}
	for i, r := range v1.Results[:2] {
		if r.Error != "" || !r.JudgeOK || !near(r.Reward, want) || r.ProblemID != qid || len(r.Criteria) != 3 || r.Criteria[2].Score != 0 {
			t.Errorf("/v1/score item %d: %+v, want reward %v", i, r, want)
		}
	}
	if r := v1.Results[2]; !r.JudgeOK || r.Reward != 0 || r.ProblemID != qid {
		t.Errorf("/v1/score of an answer with no keyword: %+v, want 0", r)
	}

	chatML := "<|im_start|>user\n" + raftQuestion + "<|im_end|>\n<|im_start|>assistant\n"
	code, out = c.post(t, "/get_reward", mustJSON(t, map[string]any{"query": []string{chatML + response + "<|im_end|>"}, "prompts": []string{chatML}}))
	var gr struct{ Rewards, Scores []float64 }
	if err := json.Unmarshal(out, &gr); code != http.StatusOK || err != nil || len(gr.Rewards) != 1 || !near(gr.Rewards[0], want) || !near(gr.Scores[0], want) {
		t.Errorf("POST /get_reward: %d %s, want reward %v", code, out, want)
	}
	code, out = c.post(t, "/score?bare=1", mustJSON(t, map[string]any{"prompt": chatML, "response": response}))
	if code != http.StatusOK || strings.TrimSpace(string(out)) != "0.6" {
		t.Errorf("POST /score?bare=1: %d %s, want 200 0.6", code, out)
	}
	close(seen)
	n := 0
	for prompt := range seen {
		n++
		if !strings.Contains(prompt, "<source_passage>\n"+raftPassage+"\n</source_passage>") {
			t.Errorf("a judge request without the corpus passage:\n%s", prompt)
		}
	}
	if n == 0 {
		t.Error("the judge saw no request")
	}
}
