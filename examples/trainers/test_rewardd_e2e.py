"""End-to-end: rewardd on the demo export, called through rubric_reward.py as verl and TRL call it.

setUpClass builds the tools (go build), starts the SIMULATED endpoint (examples/simllm) on a free loopback
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

    @classmethod
    def _start(cls):
        bindir = os.path.join(cls.tmp, "bin")
        pkgs = ["./cmd/distill", "./examples/simllm", "./examples/trainers/exportrows"]
        rewardd = os.environ.get("RUBRICFORGE_REWARDD")
        if not rewardd:
            pkgs.append("./cmd/rewardd")
            rewardd = os.path.join(bindir, "rewardd")
        subprocess.run([os.environ.get("GO", "go"), "build", "-o", bindir + os.sep] + pkgs, cwd=REPO, check=True)
        tool = lambda name: os.path.join(bindir, name)  # noqa: E731

        sim = cls._spawn([tool("simllm"), "-addr", "127.0.0.1:0", "-problems", "examples/problems.jsonl"])
        cls.judge_url = first_line(sim, "the simulated endpoint")

        run_dir, export_dir = os.path.join(cls.tmp, "run"), os.path.join(cls.tmp, "export")
        code = subprocess.run(
            [tool("distill"), "run", "--config", "examples/demo.yaml", "--base-url", cls.judge_url, "--out", run_dir, "--quiet"],
            cwd=REPO, stdout=subprocess.DEVNULL, timeout=600,
        ).returncode
        if code not in (0, 3):
            raise RuntimeError("distill run exited %d" % code)
        subprocess.run([tool("distill"), "export", run_dir, "--format", "verl", "--out", export_dir],
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL, timeout=120)
        out = subprocess.run([tool("exportrows"), export_dir], cwd=REPO, check=True, capture_output=True, text=True, timeout=120)
        cls.rows = [json.loads(line) for line in out.stdout.splitlines()]
        if len(cls.rows) < 8:
            raise RuntimeError("the demo export has only %d rows" % len(cls.rows))

        srv = cls._spawn([rewardd, "--corpus", export_dir, "--judge-base-url", cls.judge_url,
                          "--judge-model", "simulated", "--addr", "127.0.0.1:0"])
        cls.url = first_line(srv, "rewardd")
        small = cls._spawn([rewardd, "--corpus", export_dir, "--judge-base-url", cls.judge_url,
                            "--judge-model", "simulated", "--addr", "127.0.0.1:0", "--max-body", str(SMALL_BODY)])
        cls.small_url = first_line(small, "rewardd with a small --max-body")

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


if __name__ == "__main__":
    unittest.main()
