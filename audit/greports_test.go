package audit

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestUsageCountsRequestsSent: validate counts requests as distill does
// (sent to the endpoint; cache reads beside), and for a run directory it
// shows the run's own total from report.json next to the records' sum, so
// there is no third figure to reconcile.
func TestUsageCountsRequestsSent(t *testing.T) {
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
