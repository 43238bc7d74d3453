package llm

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

func TestMeter(t *testing.T) {
	m := NewMeter(map[string]Price{"big": {PromptPerMTok: 3, CompletionPerMTok: 15}}, Budget{MaxCostUSD: 1})
	if m.Exhausted() {
		t.Fatal("fresh meter exhausted")
	}
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			m.request("judge", "big")
			m.success("judge", "big", 1000, 500, []string{"stop", "length"})
			m.success("judge", "unknown", 1000, 500, nil)
			m.hit("distill")
		})
	}
	wg.Wait()
	s := m.Snapshot()
	j := s.Stages["judge"]
	wantCost := 100 * (1000*3 + 500*15) / 1e6
	if j.Requests != 100 || j.PromptTokens != 200000 || j.CompletionTokens != 100000 || !near(j.CostUSD, wantCost) {
		t.Errorf("judge stats %+v, want cost %v", j, wantCost)
	}
	if j.FinishReasons["length"] != 100 || j.Models["big"] != 100 {
		t.Errorf("maps %+v", j)
	}
	if s.Stages["distill"].CacheHits != 100 || s.Total.CacheHits != 100 || s.Total.Requests != 100 {
		t.Errorf("totals %+v", s.Total)
	}
	if !m.Exhausted() {
		t.Errorf("cost %v over a budget of 1 not exhausted", s.Total.CostUSD)
	}

	// Snapshots are deep copies.
	s.Stages["judge"].Models["big"] = 0
	if m.Snapshot().Stages["judge"].Models["big"] != 100 {
		t.Error("snapshot shares maps with the meter")
	}

	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"stages"`, `"total"`, `"cache_hits"`, `"prompt_tokens"`, `"completion_tokens"`, `"cost_usd"`, `"finish_reasons"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}

	// Restore round-trips through JSON.
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	m2 := NewMeter(nil, Budget{MaxTokens: 300000})
	m2.Restore(back)
	if !m2.Exhausted() || m2.Snapshot().Total.PromptTokens != 200000 {
		t.Errorf("restored meter: %+v", m2.Snapshot().Total)
	}
	back.Total.PromptTokens = 0
	if m2.Snapshot().Total.PromptTokens != 200000 {
		t.Error("Restore kept a reference to its argument")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
