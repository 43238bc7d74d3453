package llm

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// TestHealthShowsTheOldestRequest: Health says how many requests are out
// at the endpoint, how long the oldest has run and of which stage, and
// how long that stage's requests usually take, so that a status line can
// tell a request running far past the others (issue 43, item 7: a model
// that did not stop held the line at "0/5 done" for 9 minutes without a
// word). Runs in fake time (synctest).
func TestHealthShowsTheOldestRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := func(w http.ResponseWriter, r *http.Request) {
			if contentOf(r) == "never stops" {
				<-r.Context().Done() // a model generating to its context limit
				return
			}
			time.Sleep(2 * time.Second)
			writeJSON(w, 200, okBody(1))
		}
		opt := fastOptions()
		opt.AttemptTimeout = time.Hour
		c := newInProcessClient(t, h, opt, NewMeter(nil, Budget{}))
		for range 3 {
			req := simpleRequest("quick")
			req.Stage = "synthesize"
			if _, err := c.Chat(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		go func() {
			req := simpleRequest("never stops")
			req.Stage = "synthesize"
			_, _ = c.Chat(t.Context(), req)
		}()
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		h1 := c.Health()
		if h1.Sending != 1 || h1.Oldest != 9*time.Minute || h1.OldestStage != "synthesize" || h1.OldestTypical != 2*time.Second {
			t.Errorf("health: sending %d, oldest %v (%s), typical %v; want 1, 9m0s (synthesize), 2s", h1.Sending, h1.Oldest, h1.OldestStage, h1.OldestTypical)
		}
	})
}
