package llm

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// TestChatCollisionIsAMiss: a cached answer under the same 64-bit key but
// for another request is never returned; the request is sent, and both
// answers stay reachable.
func TestChatCollisionIsAMiss(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	responses := openTestCache(t)
	req := simpleRequest("q")
	id := IdentityOf(req)
	other := collidingID(id, "another request")
	foreign := completionBody(1, 1, Choice{Content: "the answer to another question", FinishReason: "stop"})
	if err := responses.Put(other, foreign, cache.Usage{}); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, srv.endpoint(), fastOptions(), responses, nil)
	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Cached || resp.Choices[0].Content != "answer 0" || srv.hits.Load() != 1 {
		t.Fatalf("got %+v after %d requests; want the server's answer", resp, srv.hits.Load())
	}
	if v, ok, _ := responses.Get(other); !ok || string(v) != string(foreign) {
		t.Error("the other request's answer is gone")
	}
	if resp, _ := c.Chat(t.Context(), req); !resp.Cached || resp.Choices[0].Content != "answer 0" {
		t.Errorf("second call: %+v", resp)
	}
}

// TestIdenticalRequestsInFlightSentOnce: identical requests made while one
// is in flight wait for it and get its answer as a cache hit.
func TestIdenticalRequestsInFlightSentOnce(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		<-release
		writeJSON(w, 200, okBody(1))
	})
	meter := NewMeter(map[string]Price{"m": {PromptPerMTok: 1}}, Budget{})
	c := newTestClient(t, srv.endpoint(), fastOptions(), openTestCache(t), meter)
	const callers = 10
	var waiting sync.WaitGroup
	waiting.Add(callers - 1)
	c.flights.onWait = func(cache.Identity) { waiting.Done() }

	resps := make([]*Response, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			req := simpleRequest("q")
			req.Stage = "stage" + strconv.Itoa(i%2)
			var err error
			if resps[i], err = c.Chat(t.Context(), req); err != nil {
				t.Error(err)
			}
		})
	}
	waiting.Wait()
	close(release)
	wg.Wait()
	if srv.hits.Load() != 1 {
		t.Errorf("%d requests sent, want 1", srv.hits.Load())
	}
	cached := 0
	for _, r := range resps {
		if r == nil || r.Choices[0].Content != "answer 0" {
			t.Fatalf("response %+v", r)
		}
		if r.Cached {
			cached++
		}
	}
	s := meter.Snapshot()
	if cached != callers-1 || s.Total.CacheHits != callers-1 || s.Total.Requests != 1 || s.Total.PromptTokens != 10 {
		t.Errorf("%d cached responses; meter %+v", cached, s.Total)
	}
}

// TestFollowerAsksAgainWhenLeaderStops: when the request in flight is
// canceled, a waiting identical request is sent itself.
func TestFollowerAsksAgainWhenLeaderStops(t *testing.T) {
	first := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			close(first)
			<-r.Context().Done()
			return
		}
		writeJSON(w, 200, okBody(1))
	})
	c := newTestClient(t, srv.endpoint(), fastOptions(), openTestCache(t), nil)
	waiting := make(chan struct{})
	c.flights.onWait = func(cache.Identity) { close(waiting) }
	ctx := t.Context()
	leaderCtx, cancelLeader := context.WithCancel(ctx)
	defer cancelLeader()
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.Chat(leaderCtx, simpleRequest("q"))
		leaderErr <- err
	}()
	<-first
	followerResp := make(chan *Response, 1)
	go func() {
		resp, err := c.Chat(ctx, simpleRequest("q"))
		if err != nil {
			t.Error(err)
		}
		followerResp <- resp
	}()
	<-waiting
	cancelLeader()
	if err := <-leaderErr; ClassOf(err) != ClassCanceled {
		t.Errorf("leader: %v", err)
	}
	if resp := <-followerResp; resp == nil || resp.Cached || resp.Choices[0].Content != "answer 0" {
		t.Errorf("follower: %+v", resp)
	}
	if srv.hits.Load() != 2 {
		t.Errorf("%d requests, want 2", srv.hits.Load())
	}
}
