package audit

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/schema"
)

// TestUsageCountsRequestsSent: validate counts requests as distill does
// (sent to the endpoint; cache reads beside), and for a run directory it
// shows the run's own total from report.json next to the records' sum, so
// there is no third figure to reconcile.
func TestUsageCountsRequestsSent(t *testing.T) {
	t.Parallel()
	recs := []schema.Record{groundedRecord(1, 1), groundedRecord(2, 1)}
	for i := range recs {
		recs[i].Usage = schema.Usage{Requests: 6, CachedRequests: 2, PromptTokens: 900, CompletionTokens: 300, CostUSD: 0.01}
	}
	dir := groundedRun(t, recs)
	report := `{"status": "finished", "llm": {"total": {"requests": 17, "cache_hits": 5}}}`
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := auditPath(t, Options{}, dir)
	if u := rep.Usage; u == nil || u.RunRequests == nil || *u.RunRequests != 17 || u.RunCacheReads == nil || *u.RunCacheReads != 5 {
		t.Errorf("usage %+v; want the run's 17 requests sent and 5 cache reads", rep.Usage)
	}
	for format, write := range map[string]func(w io.Writer) error{"text": rep.WriteText, "html": rep.WriteHTML} {
		out := string(render(t, write))
		for _, want := range []string{"12 requests sent", "4 answers read from the cache", "17 requests sent in all", "5 answers read from the cache"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s report does not say %q", format, want)
			}
		}
	}
	files := auditPath(t, Options{}, filepath.Join(dir, "shards", "part-00000.parquet"))
	if files.Usage == nil || files.Usage.RunRequests != nil {
		t.Errorf("shards given one by one carry a run total: %+v", files.Usage)
	}
}

// TestReportLeadsWithTheCorpusKind: a grounded corpus is reported through
// its own sections (questions, criteria, their validity) first, and the
// math sections, which would say "0 rubric items" and "Overall 0", are left
// out: from the text and the HTML, and null in JSON with the reason in
// unavailable. A math corpus has no grounded section.
func TestReportLeadsWithTheCorpusKind(t *testing.T) {
	t.Parallel()
	grounded := auditPath(t, Options{}, groundedRun(t, []schema.Record{groundedRecord(1, 2), groundedRecord(2, 1)}))
	mathRun := filepath.Join(t.TempDir(), "math")
	corpusfix.WriteRun(t, mathRun, corpusfix.Records()[:10], 4)
	math := auditPath(t, Options{}, mathRun)

	text := string(render(t, grounded.WriteText))
	for _, bad := range []string{"rubric items", "Validity by type", "Items per record", "Pass rates", "SRaR item limit"} {
		if strings.Contains(text, bad) {
			t.Errorf("the grounded text report says %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "2 records (passages), 3 questions, 15 criteria") {
		t.Errorf("the grounded text report's corpus line does not count questions and criteria:\n%s", text)
	}
	if g, u := strings.Index(text, "Grounded records"), strings.Index(text, "Tokens and cost"); g < 0 || u >= 0 && g > u {
		t.Errorf("the grounded section does not lead the report (at %d, usage at %d)", g, u)
	}

	var js map[string]any
	if err := json.Unmarshal(render(t, grounded.WriteJSON), &js); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"validity", "counts", "pass_rates", "rollouts", "empirical", "pitfall_bonus"} {
		if v, ok := js[k]; !ok || v != nil {
			t.Errorf("grounded JSON %s = %v (present %v); want null", k, v, ok)
		}
	}
	if js["grounded"] == nil || js["corpus"].(map[string]any)["rubric_kind"] != "grounded" {
		t.Errorf("grounded JSON: grounded %v, rubric_kind %v", js["grounded"] != nil, js["corpus"].(map[string]any)["rubric_kind"])
	}
	if !strings.Contains(string(render(t, grounded.WriteJSON)), `"section": "validity"`) {
		t.Error("grounded JSON does not say why validity is null")
	}

	page := string(render(t, grounded.WriteHTML))
	for _, bad := range []string{"<span>rubric items</span>", "<h2>Validity by type</h2>", "<h2>Items per record</h2>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the grounded HTML report has %q", bad)
		}
	}
	for _, want := range []string{"<b>15</b><span>criteria</span>", "<b>3</b><span>questions</span>", "Criteria validity by position"} {
		if !strings.Contains(page, want) {
			t.Errorf("the grounded HTML report lacks %q", want)
		}
	}

	if math.Grounded != nil || math.Corpus.RubricKind != "math" || math.Validity == nil {
		t.Errorf("math report: grounded %v, rubric_kind %q, validity %v", math.Grounded, math.Corpus.RubricKind, math.Validity)
	}
	if mt := string(render(t, math.WriteText)); strings.Contains(mt, "Grounded") || !strings.Contains(mt, "Validity by type") {
		t.Errorf("math text report:\n%s", mt)
	}
}
