package llm

import (
	"context"
	"crypto/sha256"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// TestIdentityKeyIsCacheKey: the identity's key is CacheKey's value and its
// digest is over the same encoding, so each request change that changes
// the key changes the digest too.
func TestIdentityKeyIsCacheKey(t *testing.T) {
	seed := int64(7)
	reqs := []Request{
		simpleRequest("q"),
		{Model: "m", Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "q"}}, Temperature: ptr(0.7), N: 3, Seed: &seed, SampleIndex: 2, JSON: true},
		{Model: "m", Messages: []Message{{Role: "user", Content: string(make([]byte, 10000))}}},
	}
	digests := map[[32]byte]bool{}
	for _, req := range reqs {
		id := IdentityOf(req)
		if id.String() != CacheKey(req) {
			t.Errorf("identity key %s, CacheKey %s", id, CacheKey(req))
		}
		digests[id.Digest] = true
	}
	if len(digests) != len(reqs) {
		t.Error("distinct requests share a digest")
	}
}

// FuzzIdentity: for any request, the identity's key equals CacheKey, and
// the stage (not part of the question) changes neither.
func FuzzIdentity(f *testing.F) {
	f.Add("m", "user", "What is 2+2?", 0.7, int64(3), 3, 100, false)
	f.Add("", "", "", 0.0, int64(0), 0, 0, true)
	f.Fuzz(func(t *testing.T, model, role, content string, temp float64, seed int64, sample, maxTokens int, json bool) {
		req := Request{Stage: "rollout", Model: model, Messages: []Message{{Role: role, Content: content}}, Temperature: &temp, Seed: &seed, SampleIndex: sample, MaxTokens: maxTokens, JSON: json}
		id := IdentityOf(req)
		if id.String() != CacheKey(req) {
			t.Fatalf("identity key %s, CacheKey %s", id, CacheKey(req))
		}
		req.Stage = "judge"
		if IdentityOf(req) != id {
			t.Fatal("the stage changed the identity")
		}
	})
}

// collidingID has id's key and another request's digest: what a 64-bit
// collision looks like to the cache.
func collidingID(id Identity, other string) Identity {
	return Identity{Key: id.Key, Digest: sha256.Sum256([]byte(other))}
}

// TestCacheCollisionKeepsBoth: two identities with one key each get their
// own answer, before and after a reopen, with and without the saved index,
// and a tombstone for one leaves the other.
func TestCacheCollisionKeepsBoth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	a := testID("a")
	b, c3 := collidingID(a, "b"), collidingID(a, "c")
	cache := openCache(t, path, nil)
	for _, p := range []struct {
		id Identity
		v  string
	}{{a, "answer a"}, {b, "answer b"}, {a, "answer a2"}} {
		if err := cache.Put(p.id, []byte(p.v), Usage{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, cache *Cache) {
		t.Helper()
		for _, w := range []struct {
			id   Identity
			want string
		}{{a, "answer a2"}, {b, "answer b"}, {c3, ""}} {
			v, ok, err := cache.Get(w.id)
			if err != nil || string(v) != w.want || ok != (w.want != "") {
				t.Errorf("%s: got %q %v %v, want %q", when, v, ok, err, w.want)
			}
		}
		if n, _ := cache.Len(); n != 2 {
			t.Errorf("%s: %d entries, want 2", when, n)
		}
	}
	check("open", cache)
	cache.Close()
	cache = openCache(t, path, nil)
	if !cache.Stats().IndexLoaded {
		t.Error("the saved index was not used")
	}
	check("reopened with the index", cache)
	cache.close(false)
	cache = openCache(t, path, nil, CacheFS(noIndexFS()))
	check("reopened reading the log", cache)

	if err := cache.Invalidate(b); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := cache.Get(b); ok {
		t.Error("an invalidated identity answered")
	}
	if v, ok, _ := cache.Get(a); !ok || string(v) != "answer a2" {
		t.Errorf("the colliding identity lost its answer: %q %v", v, ok)
	}
	cache.Close()
}

// TestChatCollisionIsAMiss: a cached answer under the same 64-bit key but
// for another request is never returned; the request is sent, and both
// answers stay reachable.
func TestChatCollisionIsAMiss(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	cache := openTestCache(t)
	req := simpleRequest("q")
	id := IdentityOf(req)
	other := collidingID(id, "another request")
	foreign := completionBody(1, 1, Choice{Content: "the answer to another question", FinishReason: "stop"})
	if err := cache.Put(other, foreign, Usage{}); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Cached || resp.Choices[0].Content != "answer 0" || srv.hits.Load() != 1 {
		t.Fatalf("got %+v after %d requests; want the server's answer", resp, srv.hits.Load())
	}
	if v, ok, _ := cache.Get(other); !ok || string(v) != string(foreign) {
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
	c.flights.onWait = func(Identity) { waiting.Done() }

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
	c.flights.onWait = func(Identity) { close(waiting) }
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
