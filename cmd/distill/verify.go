package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rubricforge/rubricforge/internal/outpath"
	"github.com/rubricforge/rubricforge/source"
	"github.com/rubricforge/rubricforge/verify"
)

const verifyUsage = `Usage: distill verify [--extract] [--out FILE] [FILE]

Runs the answer verifier alone over JSON lines, from FILE or stdin ("-" or no FILE),
and writes one JSON line per input line, in order:

  in:  {"id": 7, "gold": "\\frac{1}{2}", "pred": "... so the answer is $\\boxed{0.5}$."}
  out: {"id":7,"equal":true,"method":"numeric","gold_norm":"\\frac{1}{2}","pred_norm":"0.5"}

With --extract each line holds a model solution and the extracted answer is written:

  in:  {"id": "a1", "text": "... Therefore, the answer is 12."}
  out: {"id":"a1","answer":"12","ok":true,"method":"statement"}

"id" is optional and copied as it is; "gold", "pred" and "text" are strings (numbers are
read as written). A line that is not such an object gives {"line": N, "error": "..."} on
stdout, so output lines stay aligned with input lines, and a message naming the line on
stderr. Other field names: rename them first, e.g.
  jq -c '{id, gold: .answer, pred: .response}' data.jsonl | distill verify

"finish_reason" (optional, a string) is how the solution ended, as the endpoint said:
"length" means cut off by the token limit (no answer, never equal), another reason
("stop", ...) that the model ended it. Without it, a text that visibly stops mid-way
counts as cut off: inside math, a \boxed{, a bracket or a <think>, or in a final
sentence left unfinished ("so after 12 turns the total"); an answer given before the
cut stands unless the text takes it up again:
  in:  {"gold": "126", "pred": "So the total cost is $126.", "finish_reason": "length"}
  out: {"equal":false,"method":"none","gold_norm":"126","pred_norm":""}

Examples:
  distill verify rollouts.jsonl > verdicts.jsonl
  distill verify --extract --out answers.jsonl solutions.jsonl
  cat pairs.jsonl | distill verify -

A line whose gold answer is empty is a bad line: there is nothing to compare with. When
none of the first 100 lines has the fields read ("gold" and "pred", or "text"), nothing is
written and the message names the fields the lines have.

Exit codes: 0 every line was read (bad lines are counted in the summary on stderr),
1 reading or writing failed, 2 usage error (also: no usable line among the first 100).

Flags:
`

// checkVerifyHead reads the first lines of in as distill run checks its
// input: when none of them has the fields verify reads, it says so, naming
// the fields they have, before anything is written. It returns a reader
// that gives in from its start again.
func checkVerifyHead(in io.Reader, maxLine int, extract bool) (io.Reader, string, error) {
	var head bytes.Buffer
	r := bufio.NewReaderSize(io.TeeReader(in, &head), 64<<10)
	problem, err := source.HeadProblem(r, maxLine, func(raw []byte) string { return verifyLineProblem(raw, extract) })
	return io.MultiReader(&head, in), problem, err
}

// verifyLineProblem says why a line lacks the fields verify reads; "" when
// it has them (their values are checked line by line later).
func verifyLineProblem(raw []byte, extract bool) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "not a JSON object"
	}
	need := []string{"gold", "pred"}
	if extract {
		need = []string{"text"}
	}
	for _, f := range need {
		if v, ok := obj[f]; !ok || string(v) == "null" {
			return fmt.Sprintf("missing field %q", f)
		}
	}
	return ""
}

func verifyFields(extract bool) string {
	if extract {
		return `"text"`
	}
	return `"gold" and "pred"`
}

func verifyRenameHint(extract bool) string {
	if extract {
		return `jq -c '{id, text: .solution}' data.jsonl | distill verify --extract`
	}
	return `jq -c '{id, gold: .answer, pred: .response}' data.jsonl | distill verify`
}

func verifyCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	extract := fs.Bool("extract", false, `read {"text"} lines and write the extracted answer instead of comparing {"gold", "pred"}`)
	outPath := fs.String("out", "", "write the results to this file instead of stdout; e.g. verdicts.jsonl")
	maxLine := fs.Int("max-line-bytes", verify.DefaultMaxLineBytes, "longest input line; a longer one is reported as a bad line")
	quiet := fs.Bool("quiet", false, "no message per bad line on stderr (the summary stays)")
	force := fs.Bool("force", false, "replace the --out file when it exists")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), verifyUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() > 1:
		fmt.Fprintf(stderr, "distill verify: unexpected argument %q: give one input FILE (or none, or -, for stdin)\n\n", fs.Arg(1))
		fs.Usage()
		return exitUsage
	case *maxLine <= 0:
		fmt.Fprintf(stderr, "distill verify: --max-line-bytes must be positive, got %d\n\n", *maxLine)
		fs.Usage()
		return exitUsage
	}
	if err := outpath.File("--out", *outPath, *force, fs.Arg(0)); err != nil {
		fmt.Fprintf(stderr, "distill verify: %v\n", err)
		return exitUsage
	}
	name, in := "stdin", io.Reader(os.Stdin)
	if p := fs.Arg(0); p != "" && p != "-" {
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintf(stderr, "distill verify: %v\n", err)
			return exitFailed
		}
		defer func() { _ = f.Close() }() // only read: closing loses nothing
		name, in = p, f
	}
	in, problem, err := checkVerifyHead(in, *maxLine, *extract)
	if err != nil {
		fmt.Fprintf(stderr, "distill verify: reading %s: %v\n", name, err)
		return exitFailed
	}
	if problem != "" {
		fmt.Fprintf(stderr, "distill verify: %s: %s; it needs %s (rename them first, e.g. %s)\n", name, problem, verifyFields(*extract), verifyRenameHint(*extract))
		return exitUsage
	}
	out := stdout
	var outFile *os.File
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			fmt.Fprintf(stderr, "distill verify: %v\n", err)
			return exitFailed
		}
		outFile, out = f, f
	}
	opt := verify.JSONLOptions{Extract: *extract, MaxLineBytes: *maxLine}
	if !*quiet {
		opt.BadLine = func(line int, err error) { fmt.Fprintf(stderr, "distill verify: %s:%d: %v\n", name, line, err) }
	}
	st, err := verify.VerifyJSONL(in, out, opt)
	if outFile != nil {
		if cerr := outFile.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", *outPath, cerr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "distill verify: %s: %v\n", name, err)
		return exitFailed
	}
	what := "equal"
	if *extract {
		what = "with an answer"
	}
	fmt.Fprintf(stderr, "distill verify: %s: %d lines, %d %s, %d bad (policy %s)\n", name, st.Lines, st.Equal, what, st.Bad, verify.PolicyVersion)
	return exitOK
}
