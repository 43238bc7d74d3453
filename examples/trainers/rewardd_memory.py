"""Peak memory of rewardd under OpenRLHF <= 0.9's load: whole rollouts posted to /get_reward at once.

Starts the SIMULATED endpoint (examples/simllm) as the judge and rewardd (with the flags after --, e.g.
--max-inflight-bytes), posts CONCURRENT /get_reward bodies of SAMPLES samples of RESPONSE_BYTES each (every
response distinct, so every one is judged; the rubric travels as the label), and prints rewardd's peak resident
memory (VmHWM) and the bodies' sizes. Linux only (/proc). Standard library only.

    go build -o bin/ ./cmd/rewardd ./examples/simllm
    python3 examples/trainers/rewardd_memory.py --concurrent 8 --samples 1024 --response-bytes 36000
    python3 examples/trainers/rewardd_memory.py --concurrent 8 -- --corpus runs/big/export

With --corpus the index's memory is in the figure too (docs/rewardd.md, Memory).
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

LABEL = {
    "v": "3", "id": "mem-2-3", "scheme": "srar", "question": "What is 2+3?", "ground_truth": "5",
    "rubric": [
        {"id": 1, "type": "SUGGEST", "text": "Adds the two numbers.", "weight": 1},
        {"id": 2, "type": "PITFALL", "text": "Multiplies instead of adding.", "weight": 1},
        {"id": 3, "type": "ANSWER", "text": "The final answer is 5.", "weight": 1},
    ],
}
PROMPT = "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"


def first_line(proc, what):
    line = proc.stdout.readline().strip()
    if not line.startswith("http"):
        raise SystemExit("%s did not print its URL (got %r)" % (what, line))
    return line


def body(batch, samples, size):
    """One /get_reward body: samples distinct responses of about size bytes each."""
    filler = "We check the sum again, digit by digit. " * (size // 40)
    label = json.dumps(LABEL)
    queries = ["%s### Step 1: Add.\n2+3 = 5 (batch %d sample %d). %s\n<answer>5</answer><|im_end|>" % (PROMPT, batch, i, filler)
               for i in range(samples)]
    return json.dumps({"query": queries, "prompts": [PROMPT] * samples, "labels": [label] * samples}).encode("utf-8")


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise SystemExit("no %s in /proc/%d/status" % (key, pid))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="bin", help="directory of rewardd and simllm (e.g. --bin bin)")
    ap.add_argument("--concurrent", type=int, default=8, help="bodies posted at once (e.g. --concurrent 8)")
    ap.add_argument("--samples", type=int, default=1024, help="samples per body (e.g. --samples 1024)")
    ap.add_argument("--response-bytes", type=int, default=36000, help="bytes per response, about (e.g. --response-bytes 36000)")
    ap.add_argument("rewardd_flags", nargs="*", help="flags for rewardd after -- (e.g. -- --max-inflight-bytes 536870912)")
    args = ap.parse_args()

    procs = []
    try:
        sim = subprocess.Popen([os.path.join(args.bin, "simllm"), "-addr", "127.0.0.1:0"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        procs.append(sim)
        judge = first_line(sim, "simllm")
        rewardd = subprocess.Popen([os.path.join(args.bin, "rewardd"), "--addr", "127.0.0.1:0", "--judge-base-url", judge,
                                    "--judge-model", "simulated", "--log-level", "warn"] + args.rewardd_flags,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(rewardd)
        url = first_line(rewardd, "rewardd")
        idle = status_kib(rewardd.pid, "VmRSS")
        bodies = [body(b, args.samples, args.response_bytes) for b in range(args.concurrent)]
        codes = [None] * len(bodies)

        def post(i):
            req = urllib.request.Request(url + "/get_reward", data=bodies[i], headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=600) as resp:
                out = json.loads(resp.read())
            codes[i] = (resp.status, len(out["rewards"]), sum(out["extra_logs"]["rubric/judge_ok"]))

        start = time.monotonic()
        threads = [threading.Thread(target=post, args=(i,)) for i in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - start
        peak = status_kib(rewardd.pid, "VmHWM")
        size = sum(len(b) for b in bodies)
        print("bodies: %d x %.1f MB = %.1f MB; answers %s; %.1f s" % (len(bodies), size / len(bodies) / 1e6, size / 1e6, codes, took))
        print("rewardd RSS: idle %.0f MiB, peak %.0f MiB (%.2f x the bodies' bytes above idle)" % (
            idle / 1024, peak / 1024, (peak - idle) * 1024 / size))
        if any(c is None or c[0] != 200 for c in codes):
            sys.exit(1)
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=30)


if __name__ == "__main__":
    main()
