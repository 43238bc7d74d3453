package llm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// spendServer answers request "q<i>" with usage that depends on i, so a
// request counted twice or not at all changes the totals. Request "q<hold>"
// waits until release is closed.
func spendServer(t testing.TB, hold int, release <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []Message `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		i, _ := strconv.Atoi(strings.TrimPrefix(body.Messages[0].Content, "q"))
		if i == hold {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		writeJSON(w, 200, completionBody(int64(100+i), int64(7*i+1), Choice{Content: "a", FinishReason: "stop"}))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// spendRequest i is asked by one of two stages of one of two models.
func spendRequest(i int) Request {
	return Request{Stage: []string{"rollout", "judge"}[i%2], Model: []string{"m1", "m2"}[i%3%2], Messages: []Message{{Role: "user", Content: "q" + strconv.Itoa(i)}}}
}

var spendPrices = map[string]Price{"m1": {PromptPerMTok: 3, CompletionPerMTok: 15}, "m2": {PromptPerMTok: 0.2, CompletionPerMTok: 0.8}}

const spendRequests = 30

// runSpend opens the cache at path, restores a meter from it, asks every
// request and returns the meter's totals.
func runSpend(t testing.TB, url, path string) Snapshot {
	t.Helper()
	cache := openCache(t, path, nil)
	defer cache.Close()
	meter := NewMeter(spendPrices, Budget{})
	spent, complete := cache.Spent()
	if !complete {
		t.Fatal("spend incomplete")
	}
	meter.RestoreSpent(spent)
	c := newTestClient(t, Endpoint{BaseURL: url + "/v1"}, fastOptions(), cache, meter)
	for i := range spendRequests {
		if _, err := c.Chat(t.Context(), spendRequest(i)); err != nil {
			t.Fatal(err)
		}
	}
	return meter.Snapshot()
}

const killChildEnv = "LLM_TEST_SPEND_CHILD"

// TestSpendSurvivesKill9: a run killed with SIGKILL and resumed costs what an
// uninterrupted run costs, because the spend is restored from the cache's
// entries, not from a report written now and then.
func TestSpendSurvivesKill9(t *testing.T) {
	if v := os.Getenv(killChildEnv); v != "" {
		spendChild(t, v)
		return
	}
	open := make(chan struct{})
	close(open)
	want := runSpend(t, spendServer(t, -1, open).URL, filepath.Join(t.TempDir(), "cache.db"))

	// The child is killed while request killAt is in flight.
	const killAt = spendRequests / 3
	release := make(chan struct{})
	srv := spendServer(t, killAt, release)

	path := filepath.Join(t.TempDir(), "cache.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpendSurvivesKill9$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+srv.URL+"|"+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for done := 0; done < killAt && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "answered ") {
			done++
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	close(release)
	// The answers are counted in a copy, so the resumed run finds the
	// files as the kill left them (a Close here would save an index).
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	counted := filepath.Join(t.TempDir(), "cache.db")
	if err := os.WriteFile(counted, log, 0o600); err != nil {
		t.Fatal(err)
	}
	left := openCache(t, counted, nil)
	if n, _ := left.Len(); n != killAt {
		t.Fatalf("the killed run left %d answers, want %d", n, killAt)
	}
	left.Close()

	got := runSpend(t, srv.URL, path)
	for _, stage := range []string{"rollout", "judge"} {
		g, w := got.Stages[stage], want.Stages[stage]
		if g.PromptTokens != w.PromptTokens || g.CompletionTokens != w.CompletionTokens || math.Abs(g.CostUSD-w.CostUSD) > 1e-12 {
			t.Errorf("%s after a kill and resume: %+v; uninterrupted: %+v", stage, g, w)
		}
	}
	if math.Abs(got.Total.CostUSD-want.Total.CostUSD) > 1e-12 || got.Total.CostUSD == 0 {
		t.Errorf("total cost %v, uninterrupted %v", got.Total.CostUSD, want.Total.CostUSD)
	}
}

// spendChild asks every request, saying each answer, until it is killed.
func spendChild(t *testing.T, arg string) {
	url, path, _ := strings.Cut(arg, "|")
	cache := openCache(t, path, nil)
	c := newTestClient(t, Endpoint{BaseURL: url + "/v1"}, fastOptions(), cache, NewMeter(spendPrices, Budget{}))
	for i := range spendRequests {
		if _, err := c.Chat(t.Context(), spendRequest(i)); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("answered %d\n", i)
	}
	select {} // wait for the kill; Close would save the index
}

// TestMeterRestoreSpent: the restored tokens and cost are the cache's,
// priced with the meter's prices; the requests are the answers the cache
// paid for plus the failed ones (a report a kill left lags the cache);
// other counters are kept.
func TestMeterRestoreSpent(t *testing.T) {
	m := NewMeter(spendPrices, Budget{MaxCostUSD: 0.004})
	m.Restore(Snapshot{
		Stages: map[string]StageStats{"judge": {Requests: 1, Failures: 2, CacheHits: 4, PromptTokens: 1, CostUSD: 99}, "old": {PromptTokens: 5, CostUSD: 1}},
		Total:  StageStats{Requests: 1, Failures: 2, CacheHits: 4, PromptTokens: 6, CostUSD: 100},
	})
	m.RestoreSpent([]cache.Spend{
		{Stage: "judge", Model: "m1", Responses: 2, PromptTokens: 1000, CompletionTokens: 100},
		{Stage: "judge", Model: "m2", Responses: 1, PromptTokens: 1000, CompletionTokens: 1000},
		{Stage: "rollout", Model: "unpriced", Responses: 1, PromptTokens: 7},
	})
	s := m.Snapshot()
	judgeCost := (1000*3 + 100*15 + 1000*0.2 + 1000*0.8) / 1e6
	j := s.Stages["judge"]
	if j.Requests != 3+2 || j.CacheHits != 4 || j.PromptTokens != 2000 || j.CompletionTokens != 1100 || !near(j.CostUSD, judgeCost) {
		t.Errorf("judge %+v, want cost %v", j, judgeCost)
	}
	if s.Stages["old"].PromptTokens != 0 || s.Stages["rollout"].PromptTokens != 7 {
		t.Errorf("stages %+v", s.Stages)
	}
	if s.Total.PromptTokens != 2007 || !near(s.Total.CostUSD, judgeCost) || s.Total.Requests != 4+2 {
		t.Errorf("total %+v", s.Total)
	}
	if !m.Exhausted() {
		t.Error("the restored spend does not count against the budget")
	}
}
