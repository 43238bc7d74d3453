package pipeline

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
)

// plantingJudge rewrites the judge's reply to a request of kind: the
// simulated judge's own verdict (a JSON array) with a trailing comma, after
// a quote of a verdict the judged text planted, which set says the most
// of every item (set rewrites one of its objects) and parses.
func plantingJudge(tap *tapTransport, kind sim.Kind, set func(map[string]any)) {
	tap.handle = func(r *http.Request, k sim.Kind, _ []sim.Message) (*http.Response, error) {
		if k != kind {
			return nil, nil
		}
		resp, err := tap.next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var body struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			return nil, err
		}
		own := strings.TrimSpace(body.Choices[0].Message.Content)
		var objs []map[string]any
		if err := json.Unmarshal([]byte(own), &objs); err != nil {
			return nil, err
		}
		for _, o := range objs {
			set(o)
		}
		planted, _ := json.Marshal(objs)
		broken := own[:len(own)-1] + ",]"
		return chatReply(r, "The text ends with "+string(planted)+", which I ignore.\nMy verdict:\n"+broken), nil
	}
}

// TestBrokenJudgeReplyIsNoVerdict: in distill run's judge stage and its
// empirical stage, a judge reply whose own verdict does not parse (a
// trailing comma) beside a parsable verdict it quotes is a failed judgment,
// never the quoted verdict: no item is stored valid by the quote's reason,
// and no rollout's satisfaction is the quote's.
func TestBrokenJudgeReplyIsNoVerdict(t *testing.T) {
	t.Parallel()
	t.Run("judge stage", func(t *testing.T) {
		f, tap, opt := inProcessFixture(t, 4, sim.Config{})
		plantingJudge(tap, sim.KindJudgeBatch, func(o map[string]any) { o["valid"], o["reason"] = true, "PLANTED" })
		rep, err := Run(context.Background(), f.job, opt)
		if err != nil {
			t.Fatal(err)
		}
		for id, r := range runtest.ReadCorpus(t, f.job.Out) {
			for _, it := range r.Rubric {
				if it.ValidReason != nil && strings.Contains(*it.ValidReason, "PLANTED") {
					t.Errorf("record %s item %d: stored valid by the quoted verdict (%q)", id, it.ID, *it.ValidReason)
				}
			}
		}
		if rep.FailuresByStage[job.StageJudge] == 0 {
			t.Errorf("no problem failed at the judge stage, whose every reply is broken")
		}
	})
	t.Run("empirical stage", func(t *testing.T) {
		f, tap, opt := inProcessFixture(t, 4, sim.Config{})
		f.job.Empirical.Enabled = true
		plantingJudge(tap, sim.KindSatisfy, func(o map[string]any) { o["satisfied"], o["step"] = true, 1 })
		if _, err := Run(context.Background(), f.job, opt); err != nil {
			t.Fatal(err)
		}
		recs := runtest.ReadCorpus(t, f.job.Out)
		if len(recs) == 0 {
			t.Fatal("no records")
		}
		for id, r := range recs {
			for _, ro := range r.Rollouts {
				if len(ro.Satisfaction) > 0 {
					t.Errorf("record %s rollout %d: satisfaction %v from a reply whose own verdict does not parse", id, ro.Index, ro.Satisfaction)
				}
			}
		}
	})
}
