"""Unit tests of verifiers_rubric.py (stdlib unittest), run in verifiers' rubric loop as vfstub.py stands in
for it (verifiers is not installable here), with rewardd's HTTP answers scripted (test_rubric_reward's
Transport). test_rewardd_e2e.py runs the same loop against a real rewardd.

    python3 -m unittest examples/trainers/test_verifiers_rubric.py
"""

import json
import os
import sys
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rubric_reward as rr  # noqa: E402
import verifiers_rubric as vr  # noqa: E402
import vfstub  # noqa: E402
from test_rubric_reward import RUBRIC, Transport, result, verl_extra_info  # noqa: E402

RAR_ROW = {
    "id": "p7",
    "question": "Find the minimum of x^2 + 6x + 4.",
    "reference_answer": "-5",
    "question_source": "demo",
    "rubric": [
        {"title": "Suggest", "description": "Completes the square.", "weight": 1.0},
        {"title": "Pitfall", "description": "Sets the derivative to 6.", "weight": -0.8},
        {"title": "Answer", "description": "The final answer equals -5.", "weight": 1.0},
    ],
}
VERL_ROW = {"prompt": [{"role": "user", "content": "Find the minimum of x^2 + 6x + 4."}], "reward_model": {"ground_truth": "-5"},
            "extra_info": verl_extra_info(), "data_source": "rubricforge"}


class VerifiersRubricTest(unittest.TestCase):
    def setUp(self):
        for k in ("RUBRIC_REWARD_URL", "RUBRIC_REWARD_TOKEN", "RUBRIC_REWARD_SCHEME"):
            os.environ.pop(k, None)
        p = mock.patch.object(rr, "_sleep", lambda s: None)
        p.start()
        self.addCleanup(p.stop)

    def run_env(self, rows, transport, reward_key="reward", policy=lambda prompt, row: "### Step 1: Done.\n<answer>-5</answer>",
                truncated=lambda row: False):
        with mock.patch.object(rr, "_urlopen", transport):
            env = vfstub.SingleTurnEnv(dataset=vr.rows_for_verifiers(rows), rubric=vr.rewardd_rubric(vfstub, reward_key))
            return env.run(policy, truncated)

    def test_truncated_rollout_sends_finish_reason_length(self):
        """A rollout verifiers marks truncated goes to rewardd with finish_reason "length"; one it does not
        mark goes without a finish_reason, as before."""
        t = Transport(*[lambda body: {"results": [result()]}] * 2)
        self.run_env([VERL_ROW, RAR_ROW], t, truncated=lambda row: row["info"].get("id") == "1b2c3d4e5f607182")
        by_id = {r["body"]["items"][0].get("problem_id"): r["body"]["items"][0] for r in t.requests}
        self.assertEqual(by_id["1b2c3d4e5f607182"].get("finish_reason"), "length")
        self.assertNotIn("finish_reason", by_id["p7"])

    def test_one_request_per_rollout_when_its_functions_run_at_once(self):
        """verifiers runs a rollout's reward function and its metric functions at the same time, each in a
        thread: they share one request to rewardd (the first asks, the others wait for its answer), however
        slowly rewardd answers. One request per function would multiply the judge's work by 1 + the metrics."""
        def slow(body):
            time.sleep(0.2)  # every function of the rollout is waiting by then
            return {"results": [result(reward=0.7)]}

        t = Transport(*[slow] * (1 + len(vr.METRICS)))
        [(reward, metrics, state)] = self.run_env([VERL_ROW], t)
        self.assertEqual(len(t.requests), 1, "the rollout's functions sent %d requests" % len(t.requests))
        self.assertAlmostEqual(reward, 0.7)
        self.assertEqual(metrics["rubricforge_scored"], 1.0)

    def test_weights_are_non_negative(self):
        """verifiers refuses negative weights: the reward has weight 1, the metrics 0, whatever the rubric."""
        funcs, weights = vr.reward_funcs()
        self.assertEqual(weights, [1.0] + [0.0] * len(vr.METRICS))
        self.assertEqual([f.__name__ for f in funcs], ["rubricforge_reward"] + ["rubricforge_" + m for m in vr.METRICS])
        with self.assertRaises(ValueError):
            vfstub.Rubric(funcs, [1.0, -1.0] + [0.0] * (len(funcs) - 2))  # the stub refuses as verifiers does
        with self.assertRaises(ValueError):
            vr.reward_funcs(reward_key="pitfall")

    def test_verl_row_sends_its_rubric(self):
        """A verl row's rubric rides in its info (extra_info); the reward is rewardd's, committed PITFALL included."""
        t = Transport(lambda body: {"results": [result(reward=-0.3, score=0.2, correct=False, components={"pitfall": -0.5, "accuracy": 0.2})]})
        [(reward, metrics, state)] = self.run_env([VERL_ROW], t)
        self.assertEqual(len(t.requests), 1, "one request per rollout: the metrics read the state")
        item = t.requests[0]["body"]["items"][0]
        self.assertEqual(item["label"]["rubric"], RUBRIC)
        self.assertEqual((item["label"]["ground_truth"], item["problem_id"]), ("-5", "1b2c3d4e5f607182"))
        self.assertEqual(item["response"], "### Step 1: Done.\n<answer>-5</answer>")
        self.assertAlmostEqual(reward, -0.3)
        self.assertEqual((metrics["rubricforge_pitfall"], metrics["rubricforge_correct"], metrics["rubricforge_scored"]), (-0.5, 0.0, 1.0))
        self.assertEqual(state[vr.STATE_KEY]["reward"], -0.3)

    def test_rar_row_maps_pitfalls_and_negative_weights(self):
        """A rar row's signed weights become magnitudes with the sign as polarity; a PITFALL is -1 whatever its
        sign, a negative weight of another type is -1 too."""
        row = dict(RAR_ROW, rubric=RAR_ROW["rubric"] + [{"title": "Factual", "description": "Says the vertex is at 3.", "weight": -2}])
        t = Transport(lambda body: {"results": [result(reward=0.7)]})
        [(reward, _, _)] = self.run_env([row], t)
        label = t.requests[0]["body"]["items"][0]["label"]
        got = [(it["type"], it["weight"], it["polarity"]) for it in label["rubric"]]
        self.assertEqual(got, [("SUGGEST", 1.0, 1), ("PITFALL", 0.8, -1), ("ANSWER", 1.0, 1), ("FACTUAL", 2.0, -1)])
        self.assertEqual((label["style"], label["ground_truth"], label["id"]), ("factual_process", "-5", "p7"))
        self.assertAlmostEqual(reward, 0.7)
        positive_pitfall = dict(RAR_ROW, rubric=[{"title": "PITFALL", "description": "Divides by zero.", "weight": 0.5}])
        self.assertEqual(vr.rar_label(positive_pitfall)["rubric"][0]["polarity"], -1)

    def test_score_key_and_unscorable_rows(self):
        """reward_key score gives rewardd's [0, 1] score; a row rewardd cannot score is 0 with scored 0."""
        def answer(body):  # by the item, not the order: the rollouts run concurrently
            if "label" in body["items"][0]:
                return {"results": [result(reward=-0.3, score=0.2)]}
            return {"results": [result(reward=0, error="no rubric: the item names no problem")]}

        t = Transport(answer, answer)
        out = self.run_env([VERL_ROW, dict(VERL_ROW, extra_info={})], t, reward_key="score")
        self.assertAlmostEqual(out[0][0], 0.2)
        self.assertEqual((out[1][0], out[1][1]["rubricforge_scored"]), (0.0, 0.0))
        self.assertIn("no rubric", out[1][2][vr.STATE_KEY]["error"])

    def test_rows_for_verifiers(self):
        rows = vr.rows_for_verifiers([VERL_ROW, RAR_ROW])
        self.assertEqual(rows[0]["prompt"], VERL_ROW["prompt"])
        self.assertEqual((rows[0]["answer"], rows[0]["info"]["id"]), ("-5", "1b2c3d4e5f607182"))
        self.assertEqual((rows[1]["question"], rows[1]["answer"], rows[1]["info"]["rubric"]), (RAR_ROW["question"], "-5", RAR_ROW["rubric"]))
        json.dumps(rows)  # a dataset row: plain JSON values


if __name__ == "__main__":
    unittest.main()
