package llm

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cachedServer answers request "q<i>" with 1000+i prompt tokens of which
// 600+i came from the server's prefix cache (usage.prompt_tokens_details,
// as vLLM and the hosted APIs report them), and 10 completion tokens.
func cachedServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []Message `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		i, _ := strconv.Atoi(strings.TrimPrefix(body.Messages[0].Content, "q"))
		writeJSON(w, 200, fmt.Appendf(nil, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":10,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`, 1000+i, 1010+i, 600+i))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCachedTokensReadAndPriced: the client reads the prompt tokens a
// server's prefix cache reused, the meter counts them apart and prices
// them at the model's cached rate (cached_prompt_per_mtok; the prompt rate
// when it has none), a response cache hit reports them as the original did
// and charges nothing, and a run resumed from its response cache counts and
// costs what it did.
func TestCachedTokensReadAndPriced(t *testing.T) {
	t.Parallel()
	srv := cachedServer(t)
	prices := map[string]Price{"m": {PromptPerMTok: 2, CachedPromptPerMTok: 0.5, CompletionPerMTok: 8}, "full": {PromptPerMTok: 2, CompletionPerMTok: 8}}
	path := filepath.Join(t.TempDir(), "cache.db")
	responses := openCache(t, path, nil)
	meter := NewMeter(prices, Budget{})
	c := newTestClient(t, Endpoint{BaseURL: srv.URL + "/v1"}, fastOptions(), responses, meter)
	var wantCost float64
	for i := range 3 {
		for _, model := range []string{"m", "full"} {
			resp, err := c.Chat(t.Context(), Request{Stage: "judge", Model: model, Messages: []Message{{Role: "user", Content: "q" + strconv.Itoa(i)}}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.PromptTokens != int64(1000+i) || resp.CachedPromptTokens != int64(600+i) {
				t.Fatalf("request %d of %s: prompt %d, cached %d; want %d and %d", i, model, resp.PromptTokens, resp.CachedPromptTokens, 1000+i, 600+i)
			}
			p := prices[model]
			cachedRate := p.CachedPromptPerMTok
			if cachedRate == 0 {
				cachedRate = p.PromptPerMTok
			}
			want := (float64(400)*p.PromptPerMTok + float64(600+i)*cachedRate + 10*p.CompletionPerMTok) / 1e6
			if math.Abs(resp.CostUSD-want) > 1e-12 {
				t.Errorf("request %d of %s: cost %v, want %v", i, model, resp.CostUSD, want)
			}
			wantCost += want
		}
	}
	snap := meter.Snapshot()
	if st := snap.Stages["judge"]; st.CachedPromptTokens != 2*(600+601+602) || st.PromptTokens != 2*(1000+1001+1002) || math.Abs(st.CostUSD-wantCost) > 1e-12 {
		t.Errorf("judge stage: %+v; want cached %d of %d prompt tokens, cost %v", st, 2*(600+601+602), 2*(1000+1001+1002), wantCost)
	}
	hit, err := c.Chat(t.Context(), Request{Stage: "judge", Model: "m", Messages: []Message{{Role: "user", Content: "q1"}}})
	if err != nil || !hit.Cached || hit.CachedPromptTokens != 601 || hit.CostUSD != 0 {
		t.Errorf("a response cache hit: %+v, %v; want cached, 601 prefix-cached tokens, no cost", hit, err)
	}
	c.Close()
	responses.Close()

	// Resumed: the meter restored from the response cache counts the same.
	reopened := openCache(t, path, nil)
	defer reopened.Close()
	spent, complete := reopened.Spent()
	if !complete {
		t.Fatal("spend incomplete")
	}
	resumed := NewMeter(prices, Budget{})
	resumed.RestoreSpent(spent)
	got := resumed.Snapshot().Total
	if got.CachedPromptTokens != snap.Total.CachedPromptTokens || got.PromptTokens != snap.Total.PromptTokens || math.Abs(got.CostUSD-snap.Total.CostUSD) > 1e-12 {
		t.Errorf("restored from the cache: %+v; the run counted %+v", got, snap.Total)
	}
}
