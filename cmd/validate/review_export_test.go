package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// exportAndScore exports run with alice's log as `distill export --review`
// does (corpus.Export with the review's applier), reads the exported
// parquet back, and scores a response with rewardd's handler over the
// export: the judge must be asked about the edited item and never about
// the rejected one.
func exportAndScore(t *testing.T, run, recordID, edited string) {
	t.Helper()
	entries := readLog(t, run)
	var rejected, before string
	for _, e := range entries {
		if e.Record == recordID && e.Action == review.ActionReject {
			rejected = e.Before.Text
		}
		if e.Record == recordID && e.Action == review.ActionEdit {
			before = e.Before.Text
		}
	}
	if rejected == "" || before == "" {
		t.Fatalf("the log lacks the reject or the edit of record %s: %+v", recordID, entries)
	}
	out := filepath.Join(t.TempDir(), "export")
	ctx := context.Background()
	in, err := audit.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := review.Fingerprint(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := review.ReadDecisions([]string{review.LogPath(run, "alice")}, fp)
	if err != nil {
		t.Fatal(err)
	}
	applier, err := review.NewApplier(d, review.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := corpus.Export(ctx, run, corpus.ExportOptions{Format: corpus.FormatVerl, Out: out, Review: applier})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Review; r == nil || r.ItemsRejected < 1 || r.ItemsEdited != 1 || len(r.Reviewers) != 1 || r.Reviewers[0].Reviewer != "alice" {
		t.Fatalf("export.json's review section: %+v", m.Review)
	}

	rubric := exportedRubric(t, out, recordID)
	var texts []string
	for _, it := range rubric {
		texts = append(texts, it.Text)
	}
	joined := strings.Join(texts, "\n")
	if !strings.Contains(joined, edited) || strings.Contains(joined, rejected) || strings.Contains(joined, before) {
		t.Fatalf("the exported rubric of %s is:\n%s\nwant %q in it and neither %q nor %q", recordID, joined, edited, rejected, before)
	}
	scoreWithRewardd(t, out, recordID, rubric, edited, rejected)
}

// exportedRubric reads the rubric of record id from the verl export's
// parquet label column.
func exportedRubric(t *testing.T, out, id string) []schema.Item {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "data", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no parquet in %s: %v", out, err)
	}
	var found []schema.Item
	for _, f := range files {
		err := corpus.Scan(f, func(r *corpus.VerlRow) error {
			l, err := schema.ParseLabel([]byte(r.Label))
			if err != nil {
				return err
			}
			if l.ID == id {
				found = l.Rubric
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == nil {
		t.Fatalf("record %s is not in the export", id)
	}
	return found
}

// judgeTap records the bodies of the requests sent to the judge.
type judgeTap struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (j *judgeTap) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	j.bodies = append(j.bodies, string(b))
	j.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(b))
	return j.next.RoundTrip(r)
}

// scoreWithRewardd serves the export as rewardd does (its index and
// handler, the simulated judge behind it) and scores one response.
func scoreWithRewardd(t *testing.T, export, id string, rubric []schema.Item, edited, rejected string) {
	t.Helper()
	index, stats, err := reward.LoadIndex(export, nil)
	if err != nil || stats.Skipped != 0 {
		t.Fatalf("loading the reviewed export: %v %+v", err, stats)
	}
	tap := &judgeTap{next: llmtest.New(llmtest.Config{}).Transport()}
	client, err := llm.NewClient(llm.Endpoint{BaseURL: "http://simulated.invalid/v1"}, llm.Options{HTTPClient: &http.Client{Transport: tap}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	judge, err := reward.NewJudge(client, ps, reward.JudgeOptions{Model: "simulated"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := reward.NewServer(reward.Config{Index: index, Judge: judge})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	body, _ := json.Marshal(map[string]any{"items": []map[string]any{{"request_id": "0", "problem_id": id, "response": "### Step 1\nChoose 3 of 24.\n\nThe answer is \\boxed{2024}."}}})
	resp, err := http.Post(ts.URL+"/v1/score", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			JudgeOK bool              `json:"judge_ok"`
			Items   []json.RawMessage `json:"items"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("rewardd answered %d: %v", resp.StatusCode, err)
	}
	if len(out.Results) != 1 || !out.Results[0].JudgeOK || len(out.Results[0].Items) != len(rubric) {
		t.Fatalf("rewardd's result: %+v; want one judged result with %d item verdicts", out, len(rubric))
	}
	sent := strings.Join(tap.bodies, "\n")
	if !strings.Contains(sent, jsonText(edited)) || strings.Contains(sent, jsonText(rejected)) {
		t.Fatalf("the judge was not asked about the edited rubric (edited item sent: %v, rejected item sent: %v)",
			strings.Contains(sent, jsonText(edited)), strings.Contains(sent, jsonText(rejected)))
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
