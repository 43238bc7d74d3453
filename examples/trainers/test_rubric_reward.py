"""Unit tests of rubric_reward.py's client mechanics (stdlib unittest).

The HTTP call is replaced by a scripted transport so that retries, timeouts,
refusals and the exact requests can be checked without a server;
test_rewardd_e2e.py calls a real rewardd the way verl and TRL do.

    python3 -m unittest discover -s examples/trainers -p 'test_*.py'
"""

import copy
import io
import json
import os
import socket
import sys
import unittest
import urllib.error
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rubric_reward as rr  # noqa: E402

RUBRIC = [
    {"id": 1, "type": "SUGGEST", "text": "Completes the square.", "weight": 1, "polarity": 1},
    {"id": 2, "type": "ANSWER", "text": "The final answer equals -5.", "weight": 1, "polarity": 1},
]


CRITERIA = [
    {"id": "order", "weight": 4, "name": "Log first", "description": "The log write is durable before the pages change.",
     "required_elements": ["fsync"], "scoring_guide": "Full for order and fsync.", "verification_method": "Check the order.",
     "expected_keywords": ["log", "before"], "expected_concepts": [], "valid": True},
    {"id": "replay", "weight": 2, "name": "Replay", "description": "Recovery replays from a checkpoint.",
     "required_elements": [], "scoring_guide": "Full for replay.", "verification_method": "Check recovery.",
     "expected_keywords": ["replay"], "expected_concepts": []},
]
PASSAGE = "A write-ahead log makes a store durable: each change is appended to the log and fsynced before any data page is touched."


def grounded_extra_info(**over):
    """extra_info of a grounded question's verl row: the criteria in rubric, the passage beside them."""
    info = {
        "split": "train",
        "index": 0,
        "id": "0123456789abcdef-q1",
        "question": "Why must a database log a change before it updates the data pages?",
        "answer": "",
        "rubric": json.dumps(CRITERIA),
        "scheme": "grounded",
        "spec_version": "3",
        "passage": PASSAGE,
    }
    info.update(over)
    return info


def verl_extra_info(**over):
    """extra_info as HF datasets materializes it from a verl export row."""
    info = {
        "split": "train",
        "index": 3,
        "id": "1b2c3d4e5f607182",
        "question": "Find the minimum of x^2 + 6x + 4.",
        "answer": "-5",
        "rubric": json.dumps(RUBRIC),
        "scheme": "srar",
        "spec_version": "2",
    }
    info.update(over)
    return info


def result(reward=0.5, **over):
    r = {
        "request_id": "0",
        "reward": reward,
        "score": reward,
        "judge_ok": True,
        "correct": True,
        "components": {"accuracy": 0.45, "format": 0.05},
        "metrics": {"n_items": 2, "satisfied": 1},
        "items": [],
        "steps": [],
        "error": "",
    }
    r.update(over)
    return r


class _Response(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Transport:
    """Answers each request with the next scripted step: a dict (200 with it as JSON), bytes (200 with that
    body), an int (that status) or an exception (raised); a callable step is called with the request body
    and its result used so."""

    def __init__(self, *steps):
        self.steps = list(steps)
        self.requests = []

    def __call__(self, req, timeout=None):
        body = json.loads(req.data.decode("utf-8"))
        self.requests.append({"url": req.full_url, "body": body, "headers": dict(req.header_items()), "timeout": timeout})
        step = self.steps.pop(0)
        if callable(step) and not isinstance(step, type):
            step = step(body)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, bytes):
            return _Response(step)
        if isinstance(step, int):
            raise urllib.error.HTTPError(req.full_url, step, "status %d" % step, {}, io.BytesIO(b'{"error": "items[0].response: required"}'))
        if isinstance(step, tuple):  # (status, error text)
            body = json.dumps({"error": step[1]}).encode("utf-8")
            raise urllib.error.HTTPError(req.full_url, step[0], "status %d" % step[0], {}, io.BytesIO(body))
        return _Response(json.dumps(step).encode("utf-8"))


def answer_each(body):
    """A 200 answer with one result per item, reward = its position."""
    return {"results": [result(reward=i / 10, request_id=it["request_id"]) for i, it in enumerate(body["items"])]}


class ShimTest(unittest.TestCase):
    def setUp(self):
        self.sleeps = []
        patches = [
            mock.patch.object(rr, "_sleep", self.sleeps.append),
            mock.patch.dict(os.environ, {}, clear=False),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        for k in ("RUBRIC_REWARD_URL", "RUBRIC_REWARD_TIMEOUT", "RUBRIC_REWARD_RETRIES", "RUBRIC_REWARD_SCHEME", "RUBRIC_REWARD_TOKEN"):
            os.environ.pop(k, None)

    def use(self, transport):
        p = mock.patch.object(rr, "_urlopen", transport)
        p.start()
        self.addCleanup(p.stop)
        return transport

    def test_verl_plain_sends_the_rubric_and_returns_scalar_keys(self):
        t = self.use(Transport(lambda body: {"results": [result(reward=0.62)]}))
        info = verl_extra_info()
        before = copy.deepcopy(info)
        out = rr.compute_score(
            data_source="rubricforge/examples",
            solution_str="### Step 1: (x+3)^2-5\n<answer>-5</answer>",
            ground_truth="-5",
            extra_info=info,
            scorer_url="http://127.0.0.1:9999/",
        )
        self.assertEqual(info, before, "extra_info was modified")
        self.assertEqual(tuple(out), rr.VERL_KEYS)
        self.assertTrue(all(type(v) is float for v in out.values()), out)
        self.assertEqual(out["score"], 0.62)
        self.assertEqual((out["judge_ok"], out["correct"], out["scored"], out["n_items"]), (1.0, 1.0, 1.0, 2.0))
        self.assertEqual((out["accuracy"], out["pitfall"]), (0.45, 0.0))
        req = t.requests[0]
        self.assertEqual(req["url"], "http://127.0.0.1:9999/v1/score")
        self.assertEqual(req["timeout"], rr.DEFAULT_TIMEOUT)
        item = req["body"]["items"][0]
        self.assertEqual(item["label"]["rubric"], RUBRIC)
        self.assertEqual(item["label"]["ground_truth"], "-5")
        self.assertEqual(item["label"]["scheme"], "srar")
        self.assertEqual(item["problem_id"], "1b2c3d4e5f607182")
        self.assertEqual(item["response"], "### Step 1: (x+3)^2-5\n<answer>-5</answer>")

    def test_grounded_row_sends_the_grounded_label(self):
        """A grounded row's label carries the passage and the criteria as rewardd reads a grounded question
        (style and scheme grounded, an empty rubric), not the criteria as a math rubric, which rewardd
        cannot parse (string ids); for verl and for TRL without the label column alike."""
        info = grounded_extra_info()
        before = copy.deepcopy(info)
        want = {
            "v": "3", "id": info["id"], "scheme": "grounded", "style": "grounded", "question": info["question"],
            "ground_truth": "", "rubric": [],
            "grounded": {"record_id": "0123456789abcdef", "index": 1, "passage": PASSAGE, "criteria": CRITERIA},
        }
        t = self.use(Transport(lambda body: {"results": [result(reward=0.75)]}))
        out = rr.compute_score("rubricforge-documents", "The log is fsynced before the pages.", "", info)
        self.assertEqual(out["score"], 0.75)
        self.assertEqual(info, before, "extra_info was modified")
        item = t.requests[0]["body"]["items"][0]
        self.assertEqual(item["label"], want)
        self.assertEqual(item["problem_id"], info["id"])

        t = self.use(Transport(lambda body: {"results": [result(reward=0.75)]}))
        rr.rubric_reward(prompts=[[{"role": "user", "content": info["question"]}]], completions=["x"], extra_info=[info])
        self.assertEqual(t.requests[0]["body"]["items"][0]["label"], want, "TRL without the label column")

    def test_grounded_row_without_its_passage_is_found_by_id(self):
        """No passage (an export written before extra_info had it): no label, rewardd finds the question by id."""
        t = self.use(Transport(lambda body: {"results": [result()]}))
        rr.compute_score("s", "x", "", grounded_extra_info(passage=None))
        item = t.requests[0]["body"]["items"][0]
        self.assertNotIn("label", item)
        self.assertEqual(item["problem_id"], "0123456789abcdef-q1")

    def test_verl_batch_keywords_and_positional_give_the_same_keys_in_order(self):
        class Column(list):
            """Stands in for verl's numpy object arrays: a sequence that is not a list of str."""

        n = 5
        infos = Column(verl_extra_info(id="p%d" % i) for i in range(n))
        sols = ["answer %d" % i for i in range(n)]
        truths = ["-5"] * n
        for call in (
            lambda: rr.compute_score(data_sources=Column(["s"] * n), solution_strs=sols, ground_truths=truths, extra_infos=infos),
            lambda: rr.compute_score(Column(["s"] * n), sols, truths, infos),
        ):
            t = self.use(Transport(answer_each))
            out = call()
            self.assertEqual(len(out), n)
            self.assertEqual([o["score"] for o in out], [i / 10 for i in range(n)])
            self.assertTrue(all(tuple(o) == rr.VERL_KEYS for o in out))
            self.assertEqual(len(t.requests), 1, "one request for the batch")
            self.assertEqual([it["problem_id"] for it in t.requests[0]["body"]["items"]], ["p%d" % i for i in range(n)])

    def test_batch_is_split_into_bounded_requests(self):
        n = rr.BATCH_ITEMS * 2 + 3
        t = self.use(Transport(answer_each, answer_each, answer_each))
        out = rr.compute_score(data_sources=["s"] * n, solution_strs=["x"] * n, ground_truths=["1"] * n, extra_infos=[verl_extra_info()] * n)
        self.assertEqual(len(out), n)
        self.assertEqual([len(r["body"]["items"]) for r in t.requests], [rr.BATCH_ITEMS, rr.BATCH_ITEMS, 3])

    def test_batch_is_split_by_bytes(self):
        big = "x" * (3 << 20)  # 3 MiB responses: at most two fit in an 8 MiB request
        t = self.use(Transport(*([answer_each] * 3)))
        out = rr.compute_score(data_sources=["s"] * 5, solution_strs=[big] * 5, ground_truths=["1"] * 5, extra_infos=[verl_extra_info()] * 5)
        self.assertEqual(len(out), 5)
        self.assertEqual([len(r["body"]["items"]) for r in t.requests], [2, 2, 1])
        for r in t.requests:
            self.assertLessEqual(len(json.dumps(r["body"]).encode("utf-8")), rr.BATCH_BYTES)

    def test_a_413_halves_the_chunk(self):
        too_large = (413, "the request body of 9000000 bytes is larger than the 8388608 allowed (--max-body)")
        t = self.use(Transport(too_large, answer_each, too_large, answer_each, answer_each))
        out = rr.compute_score(data_sources=["s"] * 4, solution_strs=["a", "b", "c", "d"], ground_truths=["1"] * 4, extra_infos=[verl_extra_info()] * 4)
        self.assertEqual([len(r["body"]["items"]) for r in t.requests], [4, 2, 2, 1, 1])
        self.assertEqual([[it["response"] for it in r["body"]["items"]] for r in t.requests][-3:], [["c", "d"], ["c"], ["d"]])
        self.assertEqual([o["score"] for o in out], [0.0, 0.1, 0.0, 0.0], "results in item order")
        self.assertEqual(self.sleeps, [], "a 413 is not waited for")

    def test_one_item_too_large_names_the_limit(self):
        self.use(Transport((413, "the request body of 9000000 bytes is larger than the 8388608 allowed (--max-body)")))
        with self.assertRaises(rr.RewardError) as ctx:
            rr.compute_score("s", "x" * 100, "1", verl_extra_info())
        self.assertIn("--max-body", str(ctx.exception))
        self.assertIn("413", str(ctx.exception))

    def test_a_reset_connection_is_retried(self):
        t = self.use(Transport(ConnectionResetError(104, "Connection reset by peer"), {"results": [result()]}))
        self.assertEqual(rr.compute_score("s", "x", "1", verl_extra_info())["score"], 0.5)
        self.assertEqual(len(t.requests), 2)

    def test_gives_up_naming_the_cause(self):
        refused = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
        self.use(Transport(refused, refused, refused))
        with self.assertRaises(rr.RewardError) as ctx:
            rr.compute_score("s", "x", "1", verl_extra_info(), retries=2, scorer_url="http://127.0.0.1:9")
        msg = str(ctx.exception)
        self.assertIn("Connection refused", msg)
        self.assertIn("is rewardd running", msg)
        self.assertNotIn("<urlopen error", msg)
        self.use(Transport(*([(503, "rewardd is busy: 4096 requests in progress (--max-queue)")] * 2)))
        with self.assertRaises(rr.RewardError) as ctx:
            rr.compute_score("s", "x", "1", verl_extra_info(), retries=1)
        self.assertIn("--max-queue", str(ctx.exception))

    def test_an_item_rewardd_could_not_score_keeps_the_key_set(self):
        self.use(Transport(lambda body: {"results": [result(), result(reward=0.9, error="unknown problem", judge_ok=False, components={}, metrics={})]}))
        out = rr.compute_score(data_sources=["s", "s"], solution_strs=["a", "b"], ground_truths=["1", "2"], extra_infos=[None, None])
        self.assertEqual([tuple(o) for o in out], [rr.VERL_KEYS, rr.VERL_KEYS])
        self.assertEqual((out[1]["score"], out[1]["scored"], out[1]["judge_ok"]), (0.0, 0.0, 0.0))

    def test_none_fields_are_absent(self):
        t = self.use(Transport(lambda body: {"results": [result()]}))
        info = verl_extra_info(rubric=None, id=None, scheme=None, spec_version=None)
        rr.compute_score("s", None, None, info)
        item = t.requests[0]["body"]["items"][0]
        self.assertEqual(item, {"request_id": "0", "response": "", "question": info["question"]})
        t = self.use(Transport(lambda body: {"results": [result()]}))
        rr.compute_score("s", "x", None, None)
        self.assertEqual(t.requests[0]["body"]["items"][0], {"request_id": "0", "response": "x"})
        t = self.use(Transport(lambda body: {"results": [result()]}))
        rr.compute_score("s", "x", None, verl_extra_info())
        self.assertEqual(t.requests[0]["body"]["items"][0]["label"]["ground_truth"], "-5", "falls back to extra_info.answer")

    def test_retries_with_backoff_then_succeeds(self):
        t = self.use(Transport(503, socket.timeout("timed out"), urllib.error.URLError("refused"), {"results": [result()]}))
        out = rr.compute_score("s", "x", "1", verl_extra_info(), retries=3, timeout=7)
        self.assertEqual(out["score"], 0.5)
        self.assertEqual(len(t.requests), 4)
        self.assertEqual([r["timeout"] for r in t.requests], [7.0] * 4)
        self.assertEqual(len(self.sleeps), 3)
        for i, s in enumerate(self.sleeps):
            cap = min(rr.BACKOFF_MAX, rr.BACKOFF_BASE * 2**i)
            self.assertTrue(cap / 2 <= s <= cap, (i, s))

    def test_gives_up_after_the_retries(self):
        t = self.use(Transport(*([500] * 3)))
        with self.assertRaises(rr.RewardError) as ctx:
            rr.compute_score("s", "x", "1", verl_extra_info(), retries=2)
        self.assertEqual(len(t.requests), 3)
        self.assertIn("3 attempts", str(ctx.exception))

    def test_a_refusal_is_not_retried(self):
        t = self.use(Transport(400))
        with self.assertRaises(rr.RewardError) as ctx:
            rr.compute_score("s", "x", "1", verl_extra_info())
        self.assertEqual(len(t.requests), 1)
        self.assertIn("items[0].response: required", str(ctx.exception))

    def test_a_truncated_answer_is_retried(self):
        t = self.use(Transport(b'{"results": [{"rew', {"results": [result()]}))
        self.assertEqual(rr.compute_score("s", "x", "1", verl_extra_info())["score"], 0.5)
        self.assertEqual(len(t.requests), 2)

    def test_wrong_result_count_is_an_error(self):
        self.use(Transport({"results": []}))
        with self.assertRaises(rr.RewardError):
            rr.compute_score("s", "x", "1", verl_extra_info())

    def test_token_is_sent_and_never_shown(self):
        os.environ["RUBRIC_REWARD_TOKEN"] = "s3cret-token"
        t = self.use(Transport(401))
        with self.assertRaises(rr.RewardError) as ctx:
            rr.compute_score("s", "x", "1", verl_extra_info())
        self.assertEqual(t.requests[0]["headers"].get("Authorization"), "Bearer s3cret-token")
        self.assertNotIn("s3cret", str(ctx.exception))

    def test_trl_conversational_rows(self):
        t = self.use(Transport(lambda body: {"results": [result(reward=0.25), result(error="unknown problem")]}))
        label = json.dumps({"v": "2", "id": "1b2c3d4e5f607182", "scheme": "srar", "question": "q", "ground_truth": "-5", "rubric": RUBRIC})
        prompt = [{"role": "user", "content": "Find the minimum of x^2 + 6x + 4."}]
        infos = [verl_extra_info(), verl_extra_info()]
        before = copy.deepcopy(infos)
        metrics = {}
        rewards = rr.rubric_reward(
            prompts=[prompt, prompt],
            completions=[[{"role": "assistant", "content": "<answer>-5</answer>"}], [{"role": "assistant", "content": "<answer>4</answer>"}]],
            completion_ids=[[1], [2]],
            label=[label, label],
            extra_info=infos,
            solution=["-5", "-5"],
            data_source=["rubricforge/examples"] * 2,
            log_metric=lambda name, value: metrics.__setitem__(name, value),
        )
        self.assertEqual(rewards, [0.25, None])
        self.assertEqual(infos, before)
        items = t.requests[0]["body"]["items"]
        self.assertEqual([it["label"] for it in items], [label, label], "the label column goes as it is")
        self.assertEqual([it["response"] for it in items], ["<answer>-5</answer>", "<answer>4</answer>"])
        self.assertEqual(metrics, {"rubric/judge_ok": 1.0, "rubric/scored": 0.5})

    def test_trl_plain_text_without_label_uses_the_prompt(self):
        t = self.use(Transport(lambda body: {"results": [result()]}))
        self.assertEqual(rr.rubric_reward(prompts=["What is 1+1?"], completions=["2"]), [0.5])
        self.assertEqual(t.requests[0]["body"]["items"][0], {"request_id": "0", "response": "2", "prompt": "What is 1+1?"})

    def test_settings_from_the_environment(self):
        os.environ.update({"RUBRIC_REWARD_URL": "http://10.0.0.5:8700", "RUBRIC_REWARD_TIMEOUT": "9", "RUBRIC_REWARD_SCHEME": "rgr"})
        t = self.use(Transport(lambda body: {"results": [result()]}))
        rr.rubric_reward(prompts=["p"], completions=["c"])
        req = t.requests[0]
        self.assertEqual((req["url"], req["timeout"], req["body"]["scheme"]), ("http://10.0.0.5:8700/v1/score", 9.0, "rgr"))


if __name__ == "__main__":
    unittest.main()
