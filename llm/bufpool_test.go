package llm

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAnswersSurviveBufferReuse: the buffers a good answer was read and
// cached through are reused by later requests, and no answer already
// returned, nor any cached one, changes when they are: every answer of 120
// requests of many sizes (some beyond the largest pooled size), asked by 16
// callers at once, is still its own at the end, and reads back so from the
// cache.
func TestAnswersSurviveBufferReuse(t *testing.T) {
	t.Parallel()
	answerOf := func(q string) string {
		n := 0
		fmt.Sscanf(q, "q%d", &n)
		pad := (n % 5) * (n % 5) * 5_000 // up to 80 KB: bodies of the 1 KiB to 128 KiB classes
		if n%60 == 0 {
			pad = 1_100_000 // beyond the largest pooled size
		}
		return strings.Repeat(fmt.Sprintf("<%s>", q), 1+(n*97)%400) + strings.Repeat("x", pad)
	}
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		srv.mu.Lock()
		msgs, _ := srv.bodies[n-1]["messages"].([]any)
		srv.mu.Unlock()
		q, _ := msgs[len(msgs)-1].(map[string]any)["content"].(string)
		writeJSON(w, 200, completionBody(10, 5, Choice{Content: answerOf(q), FinishReason: "stop"}))
	})
	cache := openCache(t, filepath.Join(t.TempDir(), "cache.db"), nil)
	opt := fastOptions()
	opt.AttemptTimeout = time.Minute // no retry on a loaded machine: the hits are counted below
	c := newTestClient(t, srv.endpoint(), opt, cache, nil)
	answers := make([]string, 120) // every size class, two beyond the pool, 16 at once
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range answers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, err := c.Chat(t.Context(), simpleRequest(fmt.Sprintf("q%d", i)))
			if err != nil {
				t.Error(err)
				return
			}
			answers[i] = resp.Choices[0].Content
		})
	}
	wg.Wait()
	for i, got := range answers {
		q := fmt.Sprintf("q%d", i)
		if got != answerOf(q) {
			t.Fatalf("answer to %s changed after it was returned (%d bytes, want %d)", q, len(got), len(answerOf(q)))
		}
		resp, err := c.Chat(t.Context(), simpleRequest(q))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Content != answerOf(q) {
			t.Fatalf("cached answer to %s is not its own", q)
		}
	}
	if hits := srv.hits.Load(); hits != int64(len(answers)) {
		t.Errorf("%d requests reached the server, want %d (the second round from the cache)", hits, len(answers))
	}
}
