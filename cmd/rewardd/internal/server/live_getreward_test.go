package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGetRewardNamesRubricVersion: under --state-dir, /get_reward's
// extra_logs carry rubric/version, the live rubric's version each sample
// was scored with (the rubric_version the other protocols' results name),
// 0 for a sample of no live rubric (here an unknown problem); without
// --state-dir the key is absent, as rubric_version is.
func TestGetRewardNamesRubricVersion(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	h := newHarness(t, []schema.Label{lab}, withLive(t, t.TempDir(), "r1", liveSettings()))
	all, half := []int32{1, 2, 5}, []int32{1, 5}
	liveGroup(t, h, 1, all, half, all, half)
	liveGroup(t, h, 2, all, half, all, half) // items 1, 3 and 5 retire: version 4
	body := mustJSON(t, map[string]any{
		"query": []string{
			chatMLPrompt + proposalResponse(true, 2, 5) + "<|im_end|>",
			strings.Replace(chatMLPrompt, "2+3", "7+8", 1) + proposalResponse(true, 2, 5) + "<|im_end|>",
		},
		"prompts": []string{chatMLPrompt, strings.Replace(chatMLPrompt, "2+3", "7+8", 1)},
		"labels":  []string{labelJSON(t, lab), ""},
	})
	var got getRewardAnswer
	h.post("/get_reward", body, &got)
	if v := got.ExtraLogs["rubric/version"]; !slices.Equal(v, []float64{4, 0}) {
		t.Errorf("extra_logs[rubric/version] = %v, want [4 0] (the live rubric's version; none for an unknown problem)", v)
	}
	var plain getRewardAnswer
	newHarness(t, []schema.Label{lab}).post("/get_reward", body, &plain)
	if v, ok := plain.ExtraLogs["rubric/version"]; ok {
		t.Errorf("without --state-dir extra_logs has rubric/version %v", v)
	}
}
