"""End-to-end: rewardd on the demo export, called through rubric_reward.py as verl and TRL call it.

setUpClass takes the tools as the Go tests build them (internal/testkit/testbin, once per source state: no link
when `go test` built them already), starts the SIMULATED endpoint (examples/simllm) on a free loopback
port, builds the demo corpus with `distill run --config examples/demo.yaml`, exports it with
`distill export --format verl`, reads the rows as HF datasets would give them (examples/trainers/exportrows),
and starts rewardd on the export with the simulated endpoint as its judge:

    rewardd --corpus EXPORT --judge-base-url URL --judge-model simulated --addr 127.0.0.1:0

rewardd prints its URL as the first line of stdout. RUBRICFORGE_REWARDD=/path/to/rewardd uses that binary
instead of building ./cmd/rewardd. `make test` runs this file when python3 and cmd/rewardd are there.

    python3 -m unittest examples/trainers/test_rewardd_e2e.py
"""

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import rubric_reward as rr  # noqa: E402
import verifiers_rubric as vr  # noqa: E402
import vfstub  # noqa: E402

START_TIMEOUT = 120  # seconds for a tool to print its URL or finish


def first_line(proc, what):
    """The first stdout line of proc, or a failure after START_TIMEOUT."""
    timer = threading.Timer(START_TIMEOUT, proc.kill)
    timer.start()
    try:
        line = proc.stdout.readline().strip()
    finally:
        timer.cancel()
    if not line.startswith("http"):
        raise RuntimeError("%s did not print its URL (got %r; exit %s)" % (what, line, proc.poll()))
    return line


SMALL_BODY = 64 << 10  # --max-body of the second rewardd

TOOLS = ["cmd/distill", "examples/simllm", "examples/trainers/exportrows", "cmd/rewardd"]
_tools = {}


def built_tools():
    """Package -> path of the commands the test runs, built once per source state and shared with the Go tests'
    end-to-end tests (go run ./internal/testkit/testbin/cmd/testbin: the build cache keeps testbin linked)."""
    if not _tools:
        out = subprocess.run([os.environ.get("GO", "go"), "run", "./internal/testkit/testbin/cmd/testbin"] + TOOLS,
                             cwd=REPO, check=True, stdout=subprocess.PIPE, text=True, timeout=600)
        paths = out.stdout.split()
        if len(paths) != len(TOOLS):
            raise RuntimeError("testbin printed %r for %s" % (out.stdout, TOOLS))
        _tools.update(zip(TOOLS, paths))
    return _tools


class RewarddEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs = []
        cls.tmp = tempfile.mkdtemp(prefix="rewardd-e2e-")
        try:
            cls._start()
        except BaseException:
            cls.tearDownClass()
            raise

    CONFIG = "examples/demo.yaml"

    @classmethod
    def _start(cls):
        export_dir = cls._export()
        rewardd = cls.rewardd
        srv = cls._spawn([rewardd, "--corpus", export_dir, "--judge-base-url", cls.judge_url,
                          "--judge-model", "simulated", "--addr", "127.0.0.1:0"])
        cls.url = first_line(srv, "rewardd")
        small = cls._spawn([rewardd, "--corpus", export_dir, "--judge-base-url", cls.judge_url,
                            "--judge-model", "simulated", "--addr", "127.0.0.1:0", "--max-body", str(SMALL_BODY)])
        cls.small_url = first_line(small, "rewardd with a small --max-body")

    @classmethod
    def _export(cls):
        """Builds the tools, starts the simulated endpoint, runs distill on cls.CONFIG, exports the corpus for
        verl and reads its rows into cls.rows; returns the export directory."""
        tools = built_tools()
        cls.rewardd = os.environ.get("RUBRICFORGE_REWARDD") or tools["cmd/rewardd"]
        tool = lambda name: next(path for pkg, path in tools.items() if pkg.endswith("/" + name))  # noqa: E731

        sim = cls._spawn([tool("simllm"), "-addr", "127.0.0.1:0", "-problems", "examples/problems.jsonl"])
        cls.judge_url = first_line(sim, "the simulated endpoint")

        run_dir, export_dir = os.path.join(cls.tmp, "run"), os.path.join(cls.tmp, "export")
        code = subprocess.run(
            [tool("distill"), "run", "--config", cls.CONFIG, "--base-url", cls.judge_url, "--out", run_dir, "--quiet"],
            cwd=REPO, stdout=subprocess.DEVNULL, timeout=600,
        ).returncode
        if code not in (0, 3):
            raise RuntimeError("distill run exited %d" % code)
        subprocess.run([tool("distill"), "export", run_dir, "--format", "verl", "--out", export_dir],
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL, timeout=120)
        out = subprocess.run([tool("exportrows"), export_dir], cwd=REPO, check=True, capture_output=True, text=True, timeout=120)
        cls.rows = [json.loads(line) for line in out.stdout.splitlines()]
        if len(cls.rows) < 8:
            raise RuntimeError("the %s export has only %d rows" % (cls.CONFIG, len(cls.rows)))
        return export_dir

    @classmethod
    def _spawn(cls, argv):
        proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        cls.procs.append(proc)
        return proc

    @classmethod
    def tearDownClass(cls):
        for proc in reversed(cls.procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        os.environ["RUBRIC_REWARD_URL"] = self.url

    @staticmethod
    def responses(row):
        """A well-formed solution with the right final answer, and the same with a wrong one."""
        truth = row["reward_model"]["ground_truth"]
        body = "### Step 1: Work through the problem.\nThe computation gives the value below.\n"
        return body + "<answer>%s</answer>" % truth, body + "<answer>123456789</answer>"

    def test_healthz_counts_the_export(self):
        with urllib.request.urlopen(self.url + "/healthz", timeout=10) as resp:
            health = json.loads(resp.read())
        self.assertEqual((health["ok"], health["status"], health["records"]), (True, "ok", len(self.rows)))
        self.assertEqual(health["judge"]["breaker"], "closed")

    def test_a_batch_over_max_body_is_halved(self):
        """rewardd answers 413 to a batch over its --max-body; the shim halves it until it fits."""
        rows = self.rows[:8]
        filler = "\nWe double-check the arithmetic once more." * 250  # ~11 KB a response: 16 of them pass 64 KiB
        sols, truths, infos = [], [], []
        for row in rows:
            for s in self.responses(row):
                sols.append(s.replace("<answer>", filler + "\n<answer>"))
                truths.append(row["reward_model"]["ground_truth"])
                infos.append(row["extra_info"])
        self.assertGreater(len(json.dumps(sols)), SMALL_BODY)
        out = rr.compute_score(data_sources=["s"] * len(sols), solution_strs=sols, ground_truths=truths,
                               extra_infos=infos, scorer_url=self.small_url)
        self.assertEqual([o["scored"] for o in out], [1.0] * len(sols))
        self.assertEqual([o["correct"] for o in out], [1.0, 0.0] * len(rows))

    def test_verl_plain_signature(self):
        for row in self.rows[:6]:
            good, bad = self.responses(row)
            info = row["extra_info"]
            before = copy.deepcopy(info)
            scores = [
                rr.compute_score(data_source=row["data_source"], solution_str=s, ground_truth=row["reward_model"]["ground_truth"],
                                 extra_info=info, scorer_url=self.url)
                for s in (good, bad)
            ]
            self.assertEqual(info, before, "extra_info was modified")
            for s in scores:
                self.assertEqual(tuple(s), rr.VERL_KEYS)
                self.assertTrue(all(type(v) is float for v in s.values()), s)
                self.assertEqual(s["scored"], 1.0, s)
            self.assertEqual((scores[0]["correct"], scores[1]["correct"]), (1.0, 0.0), row["extra_info"]["id"])

    def test_verl_batch_signature(self):
        rows = self.rows[:8]
        sols, truths, infos = [], [], []
        for row in rows:
            for s in self.responses(row):
                sols.append(s)
                truths.append(row["reward_model"]["ground_truth"])
                infos.append(row["extra_info"])  # one dict shared by the rollouts of a prompt, as in verl
        before = copy.deepcopy(infos)
        out = rr.compute_score(data_sources=[r["data_source"] for r in rows for _ in (0, 1)], solution_strs=sols,
                               ground_truths=truths, extra_infos=infos, scorer_url=self.url)
        self.assertEqual(infos, before)
        self.assertEqual(len(out), len(sols))
        self.assertTrue(all(tuple(o) == rr.VERL_KEYS for o in out))
        self.assertEqual([o["correct"] for o in out], [1.0, 0.0] * len(rows))

    def test_rubric_from_the_corpus_by_id(self):
        row = self.rows[0]
        info = dict(row["extra_info"], rubric=None)  # HF gives None for a missing value
        good, _ = self.responses(row)
        out = rr.compute_score("rubricforge", good, row["reward_model"]["ground_truth"], info, scorer_url=self.url)
        self.assertEqual((out["scored"], out["correct"]), (1.0, 1.0))

    def test_trl_reward_function(self):
        rows = self.rows[:8]
        columns = ("data_source", "ability", "reward_model", "extra_info", "label", "solution")
        prompts, completions, kwargs = [], [], {c: [] for c in columns}
        for row in rows:
            for s in self.responses(row):
                prompts.append(row["prompt"])
                completions.append([{"role": "assistant", "content": s}])
                for c in columns:
                    kwargs[c].append(row[c])
        metrics = {}
        rewards = rr.rubric_reward(prompts, completions, completion_ids=[[0]] * len(prompts),
                                   log_metric=lambda k, v: metrics.__setitem__(k, v), **kwargs)
        self.assertEqual(len(rewards), len(completions))
        self.assertTrue(all(type(r) is float for r in rewards), rewards)
        good, bad = rewards[0::2], rewards[1::2]
        self.assertGreater(sum(good) / len(good), sum(bad) / len(bad))
        self.assertEqual(metrics.get("rubric/scored"), 1.0)


    # The adapters (docs/ors.md, docs/nemo-gym.md, docs/verifiers.md): each pays what /v1/score pays for the
    # same answer to the same row. GroundedEndToEnd runs them on the grounded export.

    def pairs(self):
        """(row, answer) for the first four rows: the first of self.responses for even rows, the second for odd."""
        return [(row, self.responses(row)[i % 2]) for i, row in enumerate(self.rows[:4])]

    def v1_result(self, row, answer):
        item = {"problem_id": row["extra_info"]["id"], "response": answer}
        res = post(self.url, "/v1/score", {"items": [item]})["results"][0]
        self.assertEqual(res["error"], "", res)
        return res

    def v1_reward(self, row, answer):
        return self.v1_result(row, answer)["reward"]

    def test_ors_episode(self):
        """An ORS client's episode on the export: its splits are the export's, a task's prompt is the verl row's
        prompt, the answer tool's streamed reward is /v1/score's score (the reward mapped to [0, 1], so that an
        episode without an answer, counted 0, earns no more than any answer) and ends the episode."""
        env = ors(self.url, "GET", "/list_environments")[0]
        splits = [s["name"] for s in ors(self.url, "GET", "/%s/splits" % env)]
        self.assertEqual(splits, sorted({r["extra_info"]["split"] for r in self.rows}, key=["train", "validation", "test"].index))
        tasks = ors(self.url, "POST", "/%s/tasks" % env, {"split": "train"})["tasks"]
        self.assertEqual(len(tasks), sum(r["extra_info"]["split"] == "train" for r in self.rows))
        by_id = {r["extra_info"]["id"]: r for r in self.rows}
        for i, task in enumerate(tasks[:4]):
            row = by_id[task["id"]]
            answer = self.responses(row)[i % 2]
            sid = dict(ors(self.url, "POST", "/create_session"))["task_id"]
            self.assertEqual(ors(self.url, "POST", "/create", {"task_spec": task}, sid), {"sid": sid})
            prompt = ors(self.url, "GET", "/%s/prompt" % env, sid=sid)
            self.assertEqual([b["text"] for b in prompt], [m["content"] for m in row["prompt"] if m["role"] != "system"])
            out = json.loads(dict(ors(self.url, "POST", "/%s/call" % env, {"name": "answer", "input": {"answer": answer}}, sid))["end"])
            self.assertTrue(out["ok"], out)
            res = self.v1_result(row, answer)
            self.assertEqual((out["output"]["reward"], out["output"]["metadata"]["reward"], out["output"]["finished"]), (res["score"], res["reward"], True))
            ors(self.url, "POST", "/delete", sid=sid)

    def test_nemo_gym_verify(self):
        """NeMo Gym's /verify with the row's fields: the reply echoes them with /v1/score's reward, and the mask flag
        where NeMo-RL reads it (instance_config.mask_sample)."""
        for row, answer in self.pairs():
            body = {"responses_create_params": {"input": row["prompt"]},
                    "response": {"id": "resp", "output": [{"type": "message", "role": "assistant",
                                                           "content": [{"type": "output_text", "text": answer}]}]},
                    "problem_id": row["extra_info"]["id"], "label": row["label"]}
            out = post(self.url, "/verify", body)
            self.assertEqual((out["reward"], out["instance_config"]["mask_sample"], out["mask_sample"], out["problem_id"]),
                             (self.v1_reward(row, answer), False, False, row["extra_info"]["id"]))

    def test_verifiers_environment(self):
        """The verifiers rubric in verifiers' loop (vfstub: verifiers is not installable here): each rollout's
        reward is /v1/score's for its row."""
        pairs = self.pairs()
        answers = {row["extra_info"]["id"]: answer for row, answer in pairs}
        env = vfstub.SingleTurnEnv(dataset=vr.rows_for_verifiers([row for row, _ in pairs]),
                                   rubric=vr.rewardd_rubric(vfstub, scorer_url=self.url))
        out = env.run(lambda prompt, row: answers[row["info"]["id"]])
        for (row, answer), (reward, metrics, _) in zip(pairs, out):
            self.assertEqual((reward, metrics["rubricforge_scored"]), (self.v1_reward(row, answer), 1.0))

def post(url, path, body):
    """POSTs body as JSON to rewardd and returns the decoded answer."""
    req = urllib.request.Request(url + path, data=json.dumps(body).encode("utf-8"),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def ors(url, method, path, body=None, sid=None):
    """One ORS request as the protocol's client sends it: JSON in, JSON or server-sent events out (a list of
    (event, data) pairs)."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid:
        headers["X-Session-ID"] = sid
    req = urllib.request.Request(url + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=60) as resp:
        text = resp.read().decode("utf-8")
        if resp.headers.get_content_type() != "text/event-stream":
            return json.loads(text)
    events, name, data_lines = [], None, []
    for line in text.split("\n"):
        if not line:
            if name:
                events.append((name, "\n".join(data_lines)))
            name, data_lines = None, []
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            if field == "event":
                name = value.lstrip()
            elif field == "data":
                data_lines.append(value[1:] if value.startswith(" ") else value)
    return events


def chatml(messages):
    """A prompt as OpenRLHF applies a ChatML chat template to it, ready for the response."""
    turns = "".join("<|im_start|>%s\n%s<|im_end|>\n" % (m["role"], m["content"]) for m in messages)
    return turns + "<|im_start|>assistant\n"


class GroundedEndToEnd(RewarddEndToEnd):
    """Every trainer path on a grounded export (examples/demo-grounded.yaml): the verl shim (plain and batch),
    TRL with and without the label column, OpenRLHF's /get_reward, slime's /score and /v1/score. A response
    whose marker gives every criterion its full weight is paid 1 by the simulated judge, one that says
    nothing is paid less; no path may fail the sample (before, the shim's label of a grounded row did not
    parse and every sample was paid 0)."""

    CONFIG = "examples/demo-grounded.yaml"

    @classmethod
    def _start(cls):
        export_dir = cls._export()
        srv = cls._spawn([cls.rewardd, "--corpus", export_dir, "--judge-base-url", cls.judge_url,
                          "--judge-model", "simulated", "--addr", "127.0.0.1:0"])
        cls.url = first_line(srv, "rewardd")
        if any(row["ability"] != "grounded" for row in cls.rows):
            raise RuntimeError("the grounded export has rows that are not grounded questions")

    @staticmethod
    def responses(row):
        """An answer the simulated judge gives every criterion's full weight, and one it gives nothing."""
        criteria = json.loads(row["extra_info"]["rubric"])
        marker = "[sim:scores %s]" % ",".join("%s=%g" % (c["id"], c["weight"]) for c in criteria)
        return "The passage's account, point by point. " + marker, "I cannot say."

    def check_rewards(self, what, got):
        """got: (reward, judged) of each row's full and empty answer, in that order."""
        self.assertEqual(len(got), 2 * len(self.rows[:6]), what)
        for i, (reward, judged) in enumerate(got):
            self.assertTrue(judged, "%s, sample %d: not judged" % (what, i))
            if i % 2 == 0:
                self.assertAlmostEqual(reward, 1.0, msg="%s, sample %d: the full answer" % (what, i))
            else:
                self.assertLess(reward, 1.0, "%s, sample %d: the empty answer" % (what, i))

    def samples(self):
        return [(row, s) for row in self.rows[:6] for s in self.responses(row)]

    def test_verl_plain_signature(self):
        got = []
        for row, s in self.samples():
            out = rr.compute_score(row["data_source"], s, row["reward_model"]["ground_truth"], row["extra_info"], scorer_url=self.url)
            self.assertEqual(out["scored"], 1.0, out)
            got.append((out["score"], out["judge_ok"] == 1.0))
        self.check_rewards("verl plain", got)

    def test_verl_batch_signature(self):
        samples = self.samples()
        out = rr.compute_score(data_sources=[r["data_source"] for r, _ in samples], solution_strs=[s for _, s in samples],
                               ground_truths=[r["reward_model"]["ground_truth"] for r, _ in samples],
                               extra_infos=[r["extra_info"] for r, _ in samples], scorer_url=self.url)
        self.check_rewards("verl batch", [(o["score"], o["judge_ok"] == 1.0 and o["scored"] == 1.0) for o in out])

    def test_trl_reward_function(self):
        samples = self.samples()
        for columns in (("extra_info", "label", "solution"), ("extra_info", "solution")):  # with and without the label column
            kwargs = {c: [r[c] for r, _ in samples] for c in columns}
            metrics = {}
            rewards = rr.rubric_reward([r["prompt"] for r, _ in samples], [[{"role": "assistant", "content": s}] for _, s in samples],
                                       log_metric=lambda k, v: metrics.__setitem__(k, v), **kwargs)
            self.check_rewards("TRL with %s" % ", ".join(columns), [(r, r is not None) for r in rewards])
            self.assertEqual((metrics.get("rubric/scored"), metrics.get("rubric/judge_ok")), (1.0, 1.0), columns)

    def test_openrlhf_get_reward(self):
        samples = self.samples()
        prompts = [chatml(r["prompt"]) for r, _ in samples]
        for labels in ([r["label"] for r, _ in samples], None):  # --data.label_key label, and no label (found by the prompt)
            body = {"query": [p + s + "<|im_end|>" for p, (_, s) in zip(prompts, samples)], "prompts": prompts}
            if labels is not None:
                body["labels"] = labels
            out = post(self.url, "/get_reward", body)
            logs = out["extra_logs"]
            self.assertEqual(logs["rubric/error"], [0.0] * len(samples), labels is not None)
            self.check_rewards("/get_reward", [(r, ok == 1.0) for r, ok in zip(out["rewards"], logs["rubric/judge_ok"])])

    def test_slime_score(self):
        got = []
        for row, s in self.samples():
            out = post(self.url, "/score", {"prompt": row["prompt"], "response": s, "label": row["label"]})
            self.assertEqual((out["error"], out["scheme"]), ("", "grounded"), out)
            got.append((out["reward"], out["judge_ok"]))
        self.check_rewards("/score", got)

    def test_v1_score(self):
        items = [{"request_id": str(i), "problem_id": r["extra_info"]["id"], "response": s} for i, (r, s) in enumerate(self.samples())]
        out = post(self.url, "/v1/score", {"items": items})["results"]
        self.assertTrue(all(r["error"] == "" and r["scheme"] == "grounded" for r in out), out)
        self.check_rewards("/v1/score", [(r["reward"], r["judge_ok"]) for r in out])

    def test_unusable_label_falls_back_to_the_corpus(self):
        """The label the shim used to build (the criteria as a math rubric): rewardd scores the row by its
        problem id against the corpus, and says so in the result's note."""
        row = self.rows[0]
        info = row["extra_info"]
        old = {"v": info["spec_version"], "id": info["id"], "scheme": "grounded", "question": info["question"],
               "ground_truth": "", "rubric": json.loads(info["rubric"])}
        full, _ = self.responses(row)
        out = post(self.url, "/v1/score", {"items": [{"problem_id": info["id"], "label": old, "response": full}]})["results"][0]
        self.assertEqual((out["error"], out["scheme"], out["judge_ok"], out["reward"]), ("", "grounded", True, 1.0), out)
        self.assertIn("the label was not used", out["note"])

    # The math class's tests that do not apply to a grounded corpus.
    test_a_batch_over_max_body_is_halved = None
    test_rubric_from_the_corpus_by_id = None


if __name__ == "__main__":
    unittest.main()
