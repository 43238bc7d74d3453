package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// TestJudgeLayoutFlags: --judge-layout takes cache or paper and
// --judge-max-response-tokens a budget of at least 256 tokens (or -1 for
// none); -h explains both.
func TestJudgeLayoutFlags(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	judge := []string{"--judge-base-url", "http://127.0.0.1:1/v1", "--judge-model", "m"}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--judge-layout", "newspaper"}, `--judge-layout: "newspaper" is not a judge layout: want cache or paper`},
		{[]string{"--judge-max-response-tokens", "100"}, "--judge-max-response-tokens 100 is below 256"},
	} {
		var errOut bytes.Buffer
		if code := run(context.Background(), append(tc.args, judge...), io.Discard, &errOut, env); code != exitUsage || !strings.Contains(errOut.String(), tc.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", tc.args, code, errOut.String(), exitUsage, tc.says)
		}
	}
	var errOut bytes.Buffer
	run(context.Background(), []string{"-h"}, io.Discard, &errOut, env)
	for _, flag := range []string{"-judge-layout", "-judge-max-response-tokens", "-judge-warm-first"} {
		if !strings.Contains(errOut.String(), flag) {
			t.Errorf("-h does not explain -%s", flag)
		}
	}
}

// groupOf is n responses of about 1,400 characters to the demo label's
// question, drawn with seed.
func groupOf(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, seed))
	out := make([]string, n)
	for i := range out {
		out[i] = rewardtest.BenchResponse(rng, 3, "5")
	}
	return out
}

// groundedGroupOf is n answers of about 1,400 characters to a grounded
// question, drawn with seed.
func groundedGroupOf(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, seed))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for b.Len() < 1400 {
			b.WriteString([]string{"The log is written first. ", "Pages change after the fsync. ", "Recovery replays from the checkpoint. ", "Uncommitted work is undone. "}[rng.IntN(4)])
		}
		out[i] = b.String()
	}
	return out
}

// TestJudgePromptsShareTheirPrefix measures, at the simulated judge, what
// a prefix cache could not share of each judge request of a
// /v1/score_group of 8 responses sent after a warm-up group: in the cache
// layout (the default) at most the response's own length + 200 characters
// per judged response, for math and grounded questions; the paper layout,
// whose criteria come after the response, has several times that.
func TestJudgePromptsShareTheirPrefix(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	math := rewardtest.DemoLabel()
	for _, tc := range []struct {
		name   string
		label  schema.Label
		groups func(seed uint64) []string
	}{
		{"math", math, func(seed uint64) []string { return groupOf(8, seed) }},
		{"grounded", labs[0], func(seed uint64) []string { return groundedGroupOf(8, seed) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cache := unsharedPerResponse(t, "cache", tc.label, tc.groups)
			paper := unsharedPerResponse(t, "paper", tc.label, tc.groups)
			t.Logf("%s: unshareable characters per judged response beyond the response's own: cache layout %d, paper layout %d", tc.name, cache, paper)
			if cache > 200 {
				t.Errorf("cache layout: %d unshareable characters beyond the response's own per judged response, want at most 200", cache)
			}
			if paper <= cache {
				t.Errorf("paper layout: %d unshareable characters beyond the response, not more than the cache layout's %d", paper, cache)
			}
		})
	}
}

// unsharedPerResponse is the mean number of unshareable characters per
// judge request of the second of two groups scored by a rewardd in layout,
// beyond the mean length of the group's responses.
func unsharedPerResponse(t *testing.T, layout string, lab schema.Label, groups func(seed uint64) []string) int {
	t.Helper()
	rec := &sim.PromptRecorder{}
	_, simURL, stopSim, err := sim.Start(sim.Config{Prompts: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer stopSim()
	base, stop, stderr := startRewardd(t, func(string) string { return "" }, "--addr", "127.0.0.1:0", "--judge-base-url", simURL, "--judge-model", "simulated",
		"--judge-layout", layout)
	defer func() {
		if code := stop(); code != exitOK {
			t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
		}
	}()
	lb, _ := json.Marshal(lab)
	var measured []string
	for seed := range uint64(2) {
		responses := groups(seed + 1)
		body, _ := json.Marshal(map[string]any{"label": string(lb), "responses": responses})
		resp, err := http.Post(base+"/v1/score_group", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"judge_ok":true`) {
			t.Fatalf("POST /v1/score_group: %d %s", resp.StatusCode, out)
		}
		measured = responses
	}
	prompts := rec.Prompts()
	if len(prompts) != 16 {
		t.Fatalf("%d judge requests for two groups of 8", len(prompts))
	}
	unshared, own := 0, 0
	for i, p := range prompts[8:] {
		unshared += p.Unshared
		own += len(measured[i])
	}
	return (unshared - own) / len(measured)
}

// TestJudgeGroupFlag: with --judge-group a /v1/score_group of one rubric
// is one judge request holding every response (the satisfy_group
// template), each judged as alone; without it, one request per response;
// -h explains it.
func TestJudgeGroupFlag(t *testing.T) {
	t.Parallel()
	responses := groupOf(4, 9)
	lb, _ := json.Marshal(rewardtest.DemoLabel())
	body, _ := json.Marshal(map[string]any{"label": string(lb), "responses": responses})
	for _, grouped := range []bool{true, false} {
		simulator, simURL, stopSim, err := sim.Start(sim.Config{KeepLog: true})
		if err != nil {
			t.Fatal(err)
		}
		defer stopSim()
		args := []string{"--addr", "127.0.0.1:0", "--judge-base-url", simURL, "--judge-model", "simulated"}
		if grouped {
			args = append(args, "--judge-group")
		}
		base, stop, stderr := startRewardd(t, func(string) string { return "" }, args...)
		resp, err := http.Post(base+"/v1/score_group", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if code := stop(); code != exitOK {
			t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
		}
		if resp.StatusCode != http.StatusOK || strings.Count(string(out), `"judge_ok":true`) != len(responses) {
			t.Fatalf("--judge-group %v: POST /v1/score_group: %d %s", grouped, resp.StatusCode, out)
		}
		kinds := map[sim.Kind]int{}
		for _, e := range simulator.Log() {
			kinds[e.Kind]++
		}
		want := map[sim.Kind]int{sim.KindSatisfy: len(responses)}
		if grouped {
			want = map[sim.Kind]int{sim.KindSatisfyGroup: 1}
		}
		if fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Errorf("--judge-group %v: judge requests by kind %v, want %v", grouped, kinds, want)
		}
	}
	var errOut bytes.Buffer
	run(context.Background(), []string{"-h"}, io.Discard, &errOut, func(string) string { return "" })
	if !strings.Contains(errOut.String(), "-judge-group") {
		t.Error("-h does not explain -judge-group")
	}
}
