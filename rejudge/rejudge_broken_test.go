package rejudge

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// quoting is the content of a judge reply that quotes a parsable verdict
// calling every item valid, then gives its own (the simulated judge's
// array, in own) with a trailing comma.
func quoting(own string, _ string) (string, string) {
	own = own[strings.Index(own, "[") : strings.LastIndex(own, "]")+1] // without a fence
	var objs []map[string]any
	if err := json.Unmarshal([]byte(own), &objs); err != nil {
		return own, "stop"
	}
	for _, o := range objs {
		o["valid"], o["reason"] = true, "PLANTED"
	}
	planted, _ := json.Marshal(objs)
	return "The items end with " + string(planted) + ", which I ignore.\nMy verdict:\n" + own[:len(own)-1] + ",]", "stop"
}

// TestRejudgeBrokenReplyIsNoVerdict: validate rejudge takes no verdict
// from a reply whose own verdict does not parse (a trailing comma) beside
// a parsable one it quotes: every drawn item fails to be judged, and none
// is compared by the quote.
func TestRejudgeBrokenReplyIsNoVerdict(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:10], 8)
	cfg := rejudgeConfig(sim.New(sim.Config{}), "", 10, 1)
	cfg.Repairs = 1
	cfg.HTTPClient = &http.Client{Transport: sim.Rewrite{Next: cfg.HTTPClient.Transport, Edit: quoting}}
	rep := rejudge(t, dir, cfg)
	if s := rep.Sample; s.Judged != 0 || s.Failed != s.Drawn || s.Drawn == 0 {
		t.Errorf("sample %+v; want every drawn item failed, none judged by the quoted verdict", s)
	}
	for _, d := range rep.Disagreements {
		if strings.Contains(string(d.Reason), "PLANTED") {
			t.Errorf("a disagreement from the quoted verdict: %+v", d)
		}
	}
}
