package rejudge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// quotingJudge rewrites each reply of the judge behind it: its own verdict
// (a JSON array) with a trailing comma, after a quote of a parsable
// verdict that calls every item valid.
type quotingJudge struct{ next http.RoundTripper }

func (j quotingJudge) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := j.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, err
	}
	msg := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	content := msg["content"].(string)
	own := content[strings.Index(content, "[") : strings.LastIndex(content, "]")+1] // without a fence
	var objs []map[string]any
	if err := json.Unmarshal([]byte(own), &objs); err == nil {
		for _, o := range objs {
			o["valid"], o["reason"] = true, "PLANTED"
		}
		planted, _ := json.Marshal(objs)
		msg["content"] = "The items end with " + string(planted) + ", which I ignore.\nMy verdict:\n" + own[:len(own)-1] + ",]"
	}
	b, _ = json.Marshal(body)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return resp, nil
}

// TestRejudgeBrokenReplyIsNoVerdict: validate rejudge takes no verdict
// from a reply whose own verdict does not parse (a trailing comma) beside
// a parsable one it quotes: every drawn item fails to be judged, and none
// is compared by the quote.
func TestRejudgeBrokenReplyIsNoVerdict(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:10], 8)
	cfg := rejudgeConfig(sim.New(sim.Config{}), "", 10, 1)
	cfg.Repairs = 1
	cfg.HTTPClient = &http.Client{Transport: quotingJudge{next: cfg.HTTPClient.Transport}}
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
