package server

import (
	"encoding/json"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// TestVerifyMaskSampleWhereNeMoRLReadsIt: NeMo-RL reads a sample's mask
// flag from the verify reply's instance_config.mask_sample
// (nemo_rl/experience/rollouts.py, _extract_mask_sample_flags: result
// ["full_result"]["instance_config"]["mask_sample"]; NeMo Gym's simple
// agent returns the /verify reply as that full_result). Over HTTP, /verify
// puts it there: true for a failed judgment, false for a judged or an empty
// response; the row's own instance_config keeps its other keys, and one
// that is not an object is a 400 naming it.
func TestVerifyMaskSampleWhereNeMoRLReadsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	failing := "### Step 1: Add.\n2+3 = 5 " + sim.JudgeFailsMarker + "\n<answer>5</answer>"
	for _, tc := range []struct {
		name, answer string
		row          map[string]any
		masked       bool
	}{
		{"judged", rewardtest.MarkedResponse, map[string]any{"problem_id": "sum-2-3"}, false},
		{"judge failed", failing, map[string]any{"problem_id": "sum-2-3"}, true},
		{"empty", "", map[string]any{"problem_id": "sum-2-3"}, false},
		{"judge failed, the row's instance_config", failing, map[string]any{"problem_id": "sum-2-3", "instance_config": map[string]any{"sandbox": "kept"}}, true},
	} {
		var got struct {
			MaskSample     bool                       `json:"mask_sample"`
			InstanceConfig map[string]json.RawMessage `json:"instance_config"`
		}
		h.post("/verify", verifyBody(t, tc.answer, tc.row), &got)
		var masked bool
		if err := json.Unmarshal(got.InstanceConfig["mask_sample"], &masked); err != nil || masked != tc.masked || got.MaskSample != tc.masked {
			t.Errorf("%s: instance_config %s, mask_sample %v; want instance_config.mask_sample %v", tc.name, mustJSON(t, got.InstanceConfig), got.MaskSample, tc.masked)
		}
		if _, ok := tc.row["instance_config"]; ok && string(got.InstanceConfig["sandbox"]) != `"kept"` {
			t.Errorf("%s: the row's instance_config lost its keys: %s", tc.name, mustJSON(t, got.InstanceConfig))
		}
	}
	h.wantBadRequest("/verify", verifyBody(t, rewardtest.MarkedResponse, map[string]any{"problem_id": "sum-2-3", "instance_config": "sandbox"}), "instance_config")
}
