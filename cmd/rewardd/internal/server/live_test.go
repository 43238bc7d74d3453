package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/schema"
)

// liveSettings: a window of 4 groups, 8 responses before an item can be
// saturated, reinstated below 60% met, saturated items retired.
func liveSettings() livestate.Settings {
	s := livestate.DefaultSettings()
	s.Window, s.MinRollouts, s.Saturation, s.Reinstate, s.RetireSaturated, s.AdmitGroups, s.MaxAdmitted = 4, 8, 0.95, 0.6, true, 2, 2
	return s
}

// withLive serves a live state in dir.
func withLive(t testing.TB, dir, replica string, set livestate.Settings) harnessOpt {
	return func(c *Config, _ *sim.Config) {
		st, err := livestate.Open(dir, livestate.Options{Settings: set, Replica: replica})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c.Live = st
	}
}

// liveGroup posts a group of responses of sum-2-3, each satisfying sat[i]
// (correct when it satisfies item 5, the ANSWER) and marked with nonce, and
// returns the answer.
func liveGroup(t *testing.T, h *harness, nonce int, sat ...[]int32) loopGroupAnswer {
	t.Helper()
	responses := make([]string, len(sat))
	for i, ids := range sat {
		responses[i] = fmt.Sprintf("Attempt %d.\n", nonce) + proposalResponse(slices.Contains(ids, 5), ids...)
	}
	var g loopGroupAnswer
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": responses}), &g)
	return g
}

func versions(g loopGroupAnswer) []int64 {
	var out []int64
	for _, r := range g.Results {
		v := int64(-1)
		if r.RubricVersion != nil {
			v = *r.RubricVersion
		}
		out = append(out, v)
	}
	return out
}

func rubricStats(t *testing.T, h *harness) livestate.ProblemStats {
	t.Helper()
	code, body := h.do(http.MethodGet, "/v1/rubric_stats?problem_id=sum-2-3", "")
	var st livestate.ProblemStats
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("GET /v1/rubric_stats: %d %s", code, body)
	}
	return st
}

// TestLiveRubric: with --state-dir and --retire-saturated, items every
// response meets over the window (item 1, the PITFALL 3 never fallen into,
// the ANSWER 5) retire after the second group, one version each, and are
// not paid from the third group on; every result names the version it was
// scored with, the same in a group; the stats and /metrics show them; once
// the policy stops meeting the ANSWER item it comes back; a restart
// reloads the same state; a group sent twice counts once.
func TestLiveRubric(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, withLive(t, dir, "r1", liveSettings()))
	all := []int32{1, 2, 5}
	half := []int32{1, 5}
	g1 := liveGroup(t, h, 1, all, half, all, half)
	g2 := liveGroup(t, h, 2, all, half, all, half)
	if !slices.Equal(versions(g1), []int64{1, 1, 1, 1}) || !slices.Equal(versions(g2), []int64{1, 1, 1, 1}) {
		t.Fatalf("versions %v, %v; want 1 in both groups", versions(g1), versions(g2))
	}
	g3 := liveGroup(t, h, 3, all, half, all, half)
	if !slices.Equal(versions(g3), []int64{4, 4, 4, 4}) {
		t.Errorf("versions after three retirements %v, want 4", versions(g3))
	}
	for _, r := range g3.Results {
		var ids []int32
		for _, it := range r.Items {
			ids = append(ids, it.ID)
		}
		if !slices.Equal(ids, []int32{2, 4}) {
			t.Errorf("items paid at version 4: %v, want [2 4]", ids)
		}
	}
	st := rubricStats(t, h)
	states := map[int32]string{}
	for _, it := range st.Items {
		states[it.ID] = it.State
	}
	if st.Version != 4 || states[1] != "retired" || states[3] != "retired" || states[5] != "retired" || states[2] != "paid" || states[4] != "paid" {
		t.Errorf("stats: version %d, states %v", st.Version, states)
	}
	var retired []int32
	for _, e := range st.Events {
		if e.Kind == "retire" {
			retired = append(retired, e.Item)
			if e.Evidence == nil || e.Evidence.MetRate == nil || *e.Evidence.MetRate != 1 || e.Evidence.N != 8 {
				t.Errorf("retirement of %d: evidence %+v, want met_rate 1 over 8 responses", e.Item, e.Evidence)
			}
		}
	}
	if !slices.Equal(retired, []int32{1, 3, 5}) {
		t.Errorf("retired %v, want [1 3 5]", retired)
	}
	_, metrics := h.do(http.MethodGet, "/metrics", "")
	for _, line := range []string{`rewardd_live_items{scheme="srar",state="retired"} 3`, `rewardd_live_items{scheme="srar",state="saturated"} 3`, `rewardd_live_problems{scheme="srar"} 1`} {
		if !strings.Contains(string(metrics), line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}

	// The policy stops meeting item 5: over the window it falls below 60%
	// met and is paid again.
	none := []int32{1}
	liveGroup(t, h, 4, none, none, none, half)
	liveGroup(t, h, 5, none, none, none, half)
	liveGroup(t, h, 6, none, none, none, half)
	st = rubricStats(t, h)
	back := false
	for _, e := range st.Events {
		back = back || e.Kind == "reinstate" && e.Item == 5
	}
	if !back || st.Version != 5 {
		t.Errorf("after the ANSWER item stopped being met: version %d, events %+v; want item 5 reinstated at version 5", st.Version, st.Events)
	}
	before := st.Groups
	liveGroup(t, h, 4, none, none, none, half) // g4's responses again: a retry
	if st := rubricStats(t, h); st.Groups != before {
		t.Errorf("a group sent again counted: %d groups, was %d", st.Groups, before)
	}

	// /v1/score pays the live rubric too, and names its version.
	var one struct {
		Results []struct {
			RubricVersion int64 `json:"rubric_version"`
			Items         []struct{ ID int32 }
		} `json:"results"`
	}
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []any{map[string]any{"problem_id": "sum-2-3", "response": proposalResponse(true, 5)}}}), &one)
	if len(one.Results) != 1 || one.Results[0].RubricVersion != 5 || len(one.Results[0].Items) != 3 {
		t.Errorf("/v1/score under the live rubric: %+v, want version 5 and items 2, 4, 5", one.Results)
	}

	// A restart reads the same state back.
	h.srv.cfg.Live.Close()
	h2 := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, withLive(t, dir, "r1", liveSettings()))
	if st2 := rubricStats(t, h2); st2.Version != st.Version || st2.Groups != st.Groups || len(st2.Events) != len(st.Events) {
		t.Errorf("after a restart: version %d, groups %d, %d events; before: %d, %d, %d", st2.Version, st2.Groups, len(st2.Events), st.Version, st.Groups, len(st.Events))
	}
}

// TestLiveSplitState: two replicas sharing a state directory; the second
// refuses a problem the first keeps (409 naming the replica), unless told
// to warn, and then scores it with the corpus's rubric, unrecorded.
func TestLiveSplitState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, withLive(t, dir, "a", liveSettings()))
	liveGroup(t, a, 8, []int32{1, 5}, []int32{2})
	b := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, withLive(t, dir, "b", liveSettings()))
	code, body := b.do(http.MethodPost, "/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": []string{"a", "b"}}))
	if code != http.StatusConflict || !strings.Contains(string(body), `replica \"a\"`) {
		t.Errorf("the second replica: %d %s; want 409 naming replica a", code, body)
	}
	w := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, withLive(t, dir, "w", liveSettings()), func(c *Config, _ *sim.Config) { c.SplitState = SplitStateWarn })
	var g loopGroupAnswer
	w.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": []string{proposalResponse(true, 5), proposalResponse(false)}}), &g)
	if len(g.Results) != 2 || g.Results[0].RubricVersion != nil {
		t.Errorf("warn: %+v, want the corpus's rubric and no version", g.Results)
	}
	if !strings.Contains(w.logs.String(), "another replica") {
		t.Errorf("warn: nothing logged:\n%s", w.logs.String())
	}
}
