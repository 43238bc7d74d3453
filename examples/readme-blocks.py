#!/usr/bin/env python3
"""examples/readme-blocks.py: run the shell commands an example block of the
README or of docs/ shows, and check that they print what the block says.

    python3 examples/readme-blocks.py FILE --select TEXT [--select TEXT ...]
        [--sub FROM=TO ...] [--cwd DIR]

A block is a fenced code block whose lines starting with "$ " are commands; a
command may go on over a here-document (<<'JSON' ... JSON). The lines after a
command, up to the next command or the end of the block, are what it printed;
a line "..." (or "  ...") stands for lines cut from the block. Each --select
names the blocks whose first command is TEXT (its first line), else those
whose first command contains TEXT, run in the order given
(each block's commands in their order, but for those ending in "&": the
servers the caller starts); every --sub replaces FROM by TO in the
commands before they run (a port, a path), never in the expected output; the
matches of every --mask (a time, a port) are left out of the comparison;
--show-got prints, after a command whose lines differ, all it printed (marked
"GOT"), to update the block from.

For each expected line it prints "ok" or "DIFFERS" and FILE, as
examples/readme-check.sh does: a line is ok when the command printed it, on
stdout or stderr (runs of spaces count as one), in the block's order. Exit code: 0 every line ok, 1
some differ, 2 a selection matched no block or a command failed to start.
"""
import argparse
import re
import subprocess
import sys


def blocks(text):
    """Yield each fenced block as a list of (command, expected lines)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        steps = parse_block(body)
        if steps:
            yield steps


def parse_block(body):
    """Split a block's lines into commands and what each printed."""
    steps = []
    j = 0
    while j < len(body):
        line = body[j]
        if not line.startswith("$ "):
            if steps:
                steps[-1][1].append(line)
            j += 1
            continue
        cmd = [line[2:]]
        j += 1
        heredoc = re.search(r"<<'(\w+)'", line)
        while line.endswith("\\") and j < len(body):  # a command continued on the next line
            line = body[j]
            cmd.append(line)
            j += 1
        if heredoc:
            end = heredoc.group(1)
            while j < len(body):
                cmd.append(body[j])
                j += 1
                if body[j - 1] == end:
                    break
        steps.append(("\n".join(cmd), []))
    return steps


MASKS = []


def squeeze(s):
    for m in MASKS:
        s = m.sub("X", s)
    return re.sub(r" +", " ", s).rstrip()


def check(name, expected, got, out):
    """Report each expected line: ok when got holds it, in order."""
    differs = 0
    got = [squeeze(g) for g in got]
    k = 0
    for line in expected:
        if line.strip() in ("...", ""):
            continue
        want = squeeze(line)
        at = next((n for n in range(k, len(got)) if got[n] == want), None)
        if at is None:
            out.write(f"  DIFFERS  {name}: {line}\n")
            differs = 1
        else:
            out.write(f"  ok       {name}: {line}\n")
            k = at + 1
    return differs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--select", action="append", required=True, help="run the blocks whose first command contains this")
    ap.add_argument("--sub", action="append", default=[], help="FROM=TO: replace FROM by TO in the commands")
    ap.add_argument("--cwd", default=".", help="directory the commands run in")
    ap.add_argument("--mask", action="append", default=[], help="a regular expression whose matches (times, ports) are not compared")
    ap.add_argument("--show-got", action="store_true", help="after a command whose lines differ, print all it printed")
    args = ap.parse_args()
    subs = [s.split("=", 1) for s in args.sub]
    MASKS.extend(re.compile(m) for m in args.mask)
    text = open(args.file, encoding="utf-8").read()
    all_blocks = list(blocks(text))
    differs = 0
    for sel in args.select:
        first = [b for b in all_blocks if b[0][0].split("\n")[0] == sel]
        chosen = first or [b for b in all_blocks if sel in b[0][0]]
        if not chosen:
            sys.stderr.write(f"readme-blocks: no block of {args.file} starts with a command holding {sel!r}\n")
            return 2
        for steps in chosen:
            for cmd, expected in steps:
                if cmd.rstrip().endswith("&"):  # a server the caller starts itself
                    continue
                for a, b in subs:
                    cmd = cmd.replace(a, b)
                run = subprocess.run(["bash", "-c", cmd], cwd=args.cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                d = check(args.file, expected, run.stdout.split("\n"), sys.stdout)
                if d and args.show_got:
                    for line in run.stdout.rstrip("\n").split("\n"):
                        sys.stdout.write(f"  GOT      {line}\n")
                differs |= d
    return differs


if __name__ == "__main__":
    sys.exit(main())
