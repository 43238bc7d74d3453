package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/schema"
)

// liveCorpus writes three problems of one rubric each (two SUGGESTs, a
// PITFALL, a BONUS and an ANSWER item).
func liveCorpus(t *testing.T) (string, []string) {
	t.Helper()
	var items []schema.Item
	for i, typ := range []string{schema.TypeSuggest, schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer} {
		items = append(items, schema.Item{ID: int32(i + 1), Type: typ, Text: "criterion " + typ, Weight: 1, Polarity: schema.PolarityOf(typ)})
	}
	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	for k := range 3 {
		id := fmt.Sprintf("kill-%d", k)
		ids = append(ids, id)
		rec := map[string]any{"id": id, "source": "tests", "problem": fmt.Sprintf("What is %d+3?", k+2), "answer": fmt.Sprint(k + 5), "style": schema.StyleSRaR, "rubric": items}
		b, _ := json.Marshal(rec)
		f.Write(append(b, '\n'))
	}
	return path, ids
}

// killGroup is a group of problem k: two responses that are correct and
// meet items 1 and 5, two that are wrong, marked with nonce.
func killGroup(k, nonce int, id string) string {
	right := fmt.Sprintf("### Step 1: Add.\nTry %d. %s\n<answer>%d</answer>", nonce, sim.SatisfiedMarker(1, 5), k+5)
	wrong := fmt.Sprintf("### Step 1: Add.\nTry %d. %s\n<answer>%d</answer>", nonce, sim.SatisfiedMarker(1), k+50)
	b, _ := json.Marshal(map[string]any{"problem_id": id, "responses": []string{right, right + " ", wrong, wrong + " "}})
	return string(b)
}

// TestLiveStateSurvivesSIGKILL runs rewardd with --state-dir as a child
// process, sends groups from four trainers at once, kills it with SIGKILL
// while groups are in flight, and starts it again on the same directory:
// every group it had answered is in the state it reloads (at most the ones
// in flight more), the log replays, and it goes on answering with the
// versions it left.
func TestLiveStateSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	sim := httptest.NewServer(sim.New(sim.Config{}))
	defer sim.Close()
	corpus, ids := liveCorpus(t)
	dir := t.TempDir()
	args := []string{"--corpus", corpus, "--judge-base-url", sim.URL + "/v1", "--judge-model", "simulated", "--addr", "127.0.0.1:0",
		"--state-dir", dir, "--retire-saturated", "--stats-window", "4", "--stats-min-rollouts", "8", "--replica-id", "kill"}
	c := startChild(t, args...)

	var acked, sent [3]atomic.Int64
	var nonce, total atomic.Int64
	stop, enough := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := (w + int(nonce.Load())) % 3
				sent[k].Add(1)
				code, _, err := c.send("/v1/score_group", killGroup(k, int(nonce.Add(1)), ids[k]))
				if err != nil {
					return // killed
				}
				if code == http.StatusOK {
					acked[k].Add(1)
					if total.Add(1) == 60 {
						once.Do(func() { close(enough) })
					}
				}
			}
		})
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-enough: // sixty groups answered, the four trainers still sending
	case <-ended:
		t.Fatalf("the trainers stopped before sixty groups were answered: %s", c.stderr.String())
	}
	if err := c.cmd.Process.Kill(); err != nil { // SIGKILL: no drain, no close
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	close(stop)
	<-ended

	d, err := livestate.Read(nil, dir)
	if err != nil {
		t.Fatalf("reading the state after the kill: %v", err)
	}
	c2 := startChild(t, args...)
	for k, id := range ids {
		code, body := getStats(t, c2, id)
		var st livestate.ProblemStats
		if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
			t.Fatalf("%s after the restart: %d %s", id, code, body)
		}
		if st.Groups < acked[k].Load() || st.Groups > sent[k].Load() {
			t.Errorf("%s: %d groups reloaded; %d were answered, %d sent", id, st.Groups, acked[k].Load(), sent[k].Load())
		}
		if d.Problems[id].Version != st.Version || d.Problems[id].Groups != st.Groups {
			t.Errorf("%s: read after the kill at version %d with %d groups, reloaded at %d with %d", id, d.Problems[id].Version, d.Problems[id].Groups, st.Version, st.Groups)
		}
		if st.Version < 2 {
			t.Errorf("%s at version %d: the saturated items never retired", id, st.Version)
		}
		code, body = c2.post(t, "/v1/score_group", killGroup(k, -1, id))
		var g struct {
			Results []struct {
				RubricVersion int64 `json:"rubric_version"`
			} `json:"results"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &g) != nil || g.Results[0].RubricVersion != st.Version {
			t.Errorf("%s: a group after the restart: %d %s; want version %d", id, code, body, st.Version)
		}
	}
}

func getStats(t *testing.T, c *child, id string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(c.base + "/v1/rubric_stats?problem_id=" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
