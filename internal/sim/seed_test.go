package sim

import (
	"bytes"
	"testing"
)

// TestGreedyJudgeIgnoresItsSeed: a judge's request at temperature 0 gets
// the reply it gets without a seed, whatever seed it sends, as from a real
// server decoding greedily; a sampled judge request, and a rollout, still
// depend on their seed.
func TestGreedyJudgeIgnoresItsSeed(t *testing.T) {
	t.Parallel()
	s := New(Config{Seed: 3})
	rendered := renderedPrompts(t)
	zero, one := 1e-45, 1.0
	reply := func(kind Kind, temp *float64, seed *int64) []byte {
		t.Helper()
		req := request{Model: "sim-test", Messages: rendered[kind], Temperature: temp, Seed: seed}
		code, body := call(t, s, req)
		if code != 200 {
			t.Fatalf("%s: status %d %s", kind, code, body)
		}
		return body
	}
	s0, s7 := int64(0), int64(7)
	for _, kind := range []Kind{KindJudgeBatch, KindJudgeItem, KindSatisfy} {
		none := reply(kind, &zero, nil)
		if !bytes.Equal(reply(kind, &zero, &s0), none) || !bytes.Equal(reply(kind, &zero, &s7), none) {
			t.Errorf("%s at temperature 0: the seed changed the reply", kind)
		}
		if !greedyJudge(&chatRequest{Temperature: &zero}, toMessages(rendered[kind])) || greedyJudge(&chatRequest{Temperature: &one}, toMessages(rendered[kind])) {
			t.Errorf("%s: greedyJudge does not tell temperature 0 from 1", kind)
		}
	}
	if greedyJudge(&chatRequest{Temperature: &zero}, toMessages(rendered[KindRollout])) {
		t.Error("a greedy rollout counts as a judge")
	}
}
