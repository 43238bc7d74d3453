package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewexport"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/reward/judge"
)

// TestServesAReviewedExport: a corpus exported with a reviewer's log
// (`distill export --review`: one item rejected, one edited) is served by
// rewardd with the reviewed rubric: the judge is asked about the edited
// text, never about the rejected item or the edited item's old text, and
// the result has one verdict per item left. (The browser test in
// cmd/validate makes such a log by keyboard and checks the export's
// parquet; rewardd's service is internal to cmd/rewardd, so its half is
// here.)
func TestServesAReviewedExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 4); err != nil {
		t.Fatal(err)
	}
	rec, rejected, before, edited := reviewTwoItems(t, ctx, run)
	out := filepath.Join(t.TempDir(), "export")
	m, err := reviewexport.Verl(ctx, run, out, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if m.Review == nil || m.Review.ItemsRejected != 1 || m.Review.ItemsEdited != 1 {
		t.Fatalf("export.json's review section: %+v", m.Review)
	}

	index, stats, err := LoadIndex(out, nil)
	if err != nil || stats.Skipped != 0 {
		t.Fatalf("loading the reviewed export: %v %+v", err, stats)
	}
	tap := &bodyTap{next: sim.New(sim.Config{}).Transport()}
	srv, err := New(Config{Index: index, Judge: newTestJudge(t, tap, 1, nil, judge.Options{Model: "simulated"})})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv}
	body, _ := json.Marshal(map[string]any{"items": []map[string]any{{"request_id": "0", "problem_id": rec.ID, "response": "### Step 1\nWork it out.\n\nThe answer is \\boxed{" + rec.Answer + "}."}}})
	var got struct {
		Results []struct {
			JudgeOK bool              `json:"judge_ok"`
			Items   []json.RawMessage `json:"items"`
		} `json:"results"`
	}
	h.post("/v1/score", string(body), &got)
	if len(got.Results) != 1 || !got.Results[0].JudgeOK || len(got.Results[0].Items) != len(rec.Items)-1 {
		t.Fatalf("rewardd's result: %+v; want one judged result with %d item verdicts (%d less the rejected one)", got, len(rec.Items)-1, len(rec.Items))
	}
	asked := tap.joined()
	if !strings.Contains(asked, jsonEscaped(edited)) {
		t.Errorf("the judge was not asked about the edited item %q:\n%s", edited, asked)
	}
	for _, gone := range []string{rejected, before} {
		if strings.Contains(asked, jsonEscaped(gone)) {
			t.Errorf("the judge was asked about %q, which the review removed", gone)
		}
	}
}

// reviewTwoItems writes alice's log over the first record of run: its
// first item rejected, its second edited. It returns the record, the
// rejected text, the edited item's text before and after.
func reviewTwoItems(t *testing.T, ctx context.Context, run string) (*review.Record, string, string, string) {
	t.Helper()
	in, err := audit.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	c, err := review.Load(ctx, in)
	if err != nil || c.Len() == 0 {
		t.Fatalf("loading the corpus for review: %v", err)
	}
	defer func() { _ = c.Close() }()
	rec, err := c.Record(ctx, c.Queue(review.Filter{}, review.Replay("alice", nil)).IDs()[0])
	if err != nil || len(rec.Items) < 3 {
		t.Fatalf("reading the first record for review: %v", err)
	}
	first, second := rec.Items[0], rec.Items[1]
	edited := "Substitutes the final answer back into every condition of the problem (edited by a reviewer)."
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	l, err := review.OpenLog(review.LogPath(run, "alice"), "alice", c.Parts[0].Fingerprint, run, now)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	s, err := review.NewSession(c, []*review.Log{l})
	if err != nil {
		t.Fatal(err)
	}
	decisions := []struct {
		key review.ItemKey
		d   review.ItemDecision
	}{
		{first.Key, review.ItemDecision{Action: review.ActionReject, Reason: "too vague to judge"}},
		{second.Key, review.ItemDecision{Action: review.ActionEdit, After: &review.ItemState{Type: second.Type, Text: edited, Weight: second.Weight}}},
	}
	for _, dec := range decisions {
		if _, _, err := s.DecideItem(ctx, rec.ID, dec.key, dec.d, now); err != nil {
			t.Fatal(err)
		}
	}
	return rec, first.Text, second.Text, edited
}

// bodyTap records the bodies of the requests sent to the judge.
type bodyTap struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (b *bodyTap) RoundTrip(r *http.Request) (*http.Response, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.bodies = append(b.bodies, string(data))
	b.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(data))
	return b.next.RoundTrip(r)
}

func (b *bodyTap) joined() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.bodies, "\n")
}

// jsonEscaped is s as it appears inside a JSON string.
func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
