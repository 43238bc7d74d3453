package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/refine"
	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/schema"
)

// docs/validate.md documents the JSON report in a table, one row per
// top-level key with the keys inside it, and docs/validate-agreement.md
// rejudge's and agreement's keys in a paragraph. These tests hold the
// reports to them both ways, at every depth, on inputs that leave figures
// uncomputable.

var (
	backticked = regexp.MustCompile("`([a-z][a-z0-9_]*)`")
	quoted     = regexp.MustCompile(`"([a-z][a-z0-9_]*)"`)
)

func identifiers(s string) map[string]bool {
	out := map[string]bool{}
	for _, re := range []*regexp.Regexp{backticked, quoted} {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// validateDocs is the text of the pages that document validate's JSON.
func validateDocs(t *testing.T) string {
	t.Helper()
	var text strings.Builder
	for _, page := range []string{"../../docs/validate.md", "../../docs/validate-agreement.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(b)
		text.WriteString("\n\n")
	}
	return text.String()
}

// documentedAudit reads the validate table: top-level key -> the keys its
// row names.
func documentedAudit(t *testing.T, readme string) map[string]map[string]bool {
	t.Helper()
	at := strings.Index(readme, "Its keys (rates and shares")
	if at < 0 {
		t.Fatal("docs/validate.md: the validate JSON table is not found")
	}
	rows := map[string]map[string]bool{}
	for _, line := range strings.Split(readme[at:], "\n")[1:] {
		if strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| key") || line == "" && len(rows) == 0 {
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(line, " | ")
		key := backticked.FindStringSubmatch(cells[0])[1]
		rows[key] = identifiers(strings.Join(cells[1:], " | "))
	}
	return rows
}

// documentedAgreement reads the paragraph of rejudge and agreement keys.
func documentedAgreement(t *testing.T, readme string) map[string]bool {
	t.Helper()
	at := strings.Index(readme, "`rejudge` and `agreement` take `--json` too:")
	if at < 0 {
		t.Fatal("docs/validate-agreement.md: the rejudge and agreement keys are not found")
	}
	para := readme[at:]
	para = para[:strings.Index(para, "\n\n")]
	return identifiers(strings.TrimPrefix(para, "`rejudge` and `agreement` take `--json` too:"))
}

// keyPaths lists every key path of v ("a.b[].c") with what is there:
// "null", "[]" for an empty list, or "value".
func keyPaths(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			out[p] = kindOf(e)
			keyPaths(e, p, out)
		}
	case []any:
		for _, e := range x {
			keyPaths(e, path+"[]", out)
		}
	}
}

func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case []any:
		if len(x) == 0 {
			return "[]"
		}
	}
	return "value"
}

func lastKey(path string) string {
	path = strings.ReplaceAll(path, "[]", "")
	return path[strings.LastIndex(path, ".")+1:]
}

func reportPaths(t *testing.T, stdout string) map[string]string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, stdout)
	}
	out := map[string]string{}
	keyPaths(v, "", out)
	return out
}

// hiddenBy reports whether path lies under a null or an empty list of got.
func hiddenBy(path string, got map[string]string) bool {
	for p := path; ; {
		i := max(strings.LastIndex(p, "."), strings.LastIndex(p, "[]"))
		if i <= 0 {
			return false
		}
		p = p[:i]
		if k := got[strings.TrimSuffix(p, "[]")]; k == "null" || k == "[]" {
			return true
		}
	}
}

// TestAuditJSONDocumented: every key of `validate --json`, at every depth,
// is documented in its section's row of the docs/validate.md table; on a corpus that
// has every section, every documented key is there; and on corpora that
// leave figures uncomputable (no rollouts, no verdicts, no items, no
// creation time) every key is still present, the figure null, never left
// out and never a made-up 0.
func TestAuditJSONDocumented(t *testing.T) {
	t.Parallel()
	readme := validateDocs(t)
	doc := documentedAudit(t, readme)
	agreementDoc := documentedAgreement(t, readme)

	// every section: a run with a violation, plus a JSONL file with a bad line
	full := writeRun(t, 12, func(r *schema.Record) {
		if r.ID == "r003" {
			r.Rubric[1].Polarity = -1
		}
		if r.ID == "r005" { // judged by a panel: validity and satisfaction
			synthcorpus.AddPanel(r, 1, keyJudges...)
		}
	})
	extra := filepath.Join(t.TempDir(), "extra.jsonl")
	line, _ := json.Marshal(record(900))
	gr := groundedRecord(901, "Why can two candidates not both become leader in one term?", false)
	q := &gr.Grounded.Questions[0] // scored closed- and open-book answers: the open/closed-book edge
	q.Answers = []schema.GroundedAnswer{{Index: 0, Text: "closed", Scores: []float64{1, 0}}}
	q.OpenBookAnswers = []schema.GroundedAnswer{{Index: 0, Text: "open", Scores: []float64{3, 1}}}
	synthcorpus.AddPanel(&gr, 1, keyJudges...) // the criteria's panel
	g, _ := json.Marshal(gr)
	line = append(append(line, '\n'), g...)
	os.WriteFile(extra, append(line, []byte("\n{not json\n")...), 0o644)
	// no rollouts, no verdicts, no empirical figures
	bare := writeRun(t, 6, func(r *schema.Record) {
		r.Rollouts, r.NCorrect, r.PassRate = nil, 0, 0
		for k := range r.Rubric {
			it := &r.Rubric[k]
			it.Valid, it.ValidReason, it.SatRate, it.Corr, it.EmpiricalValid = nil, nil, nil, nil, nil
		}
	})
	// a run's report.json: what of its input the corpus does not hold (run_input)
	os.WriteFile(filepath.Join(bare, "report.json"), []byte(`{"style": "srar", "problems": {"input_rows": 9, "unique": 8, "duplicates": 1, "done": 6, "left_out": 2},
 "left_out_by_stage": {"select": 2}, "skipped_files": {"files": 1, "by_extension": [{"ext": ".png", "files": 1}], "examples": ["a.png"]}}`), 0o644)
	// records without items, rollout token counts or creation time
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	var lines []byte
	for i := range 3 {
		r := record(i)
		r.Rubric, r.Provenance.CreatedAt = []schema.Item{}, time.Time{}
		for k := range r.Rollouts {
			r.Rollouts[k].CompletionTokens, r.Rollouts[k].Satisfaction = nil, nil
		}
		l, _ := json.Marshal(r)
		lines = append(append(lines, l...), '\n')
	}
	os.WriteFile(empty, lines, 0o644)
	// a verl export's file: the rubric only, so sections are unavailable
	verl := filepath.Join(t.TempDir(), "train-00000-of-00001.parquet")
	var vrows []verlRow
	for i := range 4 {
		r := record(i)
		label, _ := json.Marshal(schema.LabelOf(&r))
		v := verlRow{Label: string(label)}
		v.ExtraInfo.Split = "train"
		vrows = append(vrows, v)
	}
	if err := parquet.WriteFile(verl, vrows); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) map[string]string {
		code, stdout, stderr := validate(t, nil, append(args, "--json")...)
		if code != exitOK && code != exitPartial {
			t.Fatalf("validate %v: exit %d: %s", args, code, stderr)
		}
		return reportPaths(t, stdout)
	}
	fullPaths := run(full, extra)
	outputs := map[string]map[string]string{"full": fullPaths, "bare": run(bare), "empty": run(empty), "verl": run(verl)}
	outputs["sheet"] = run(full, extra, "--human", labelledSheet(t, full, "12")) // people's figures filled in
	outputs["review"] = run(reviewedRun(t))                                      // people's review: its section, its labels
	refined := filepath.Join(t.TempDir(), "refined")                             // a refinement: its refine.json read back
	if _, err := refine.Run(t.Context(), refine.Config{Src: full, Out: refined, Options: refine.DefaultOptions()}); err != nil {
		t.Fatal(err)
	}
	outputs["refined"] = run(refined)
	var all []string
	for _, paths := range outputs {
		all = append(all, keysOf(paths)...)
	}

	for name, paths := range outputs {
		for p := range paths {
			top, _, _ := strings.Cut(p, ".")
			row, ok := doc[strings.TrimSuffix(top, "[]")]
			k := lastKey(p)
			switch {
			case !ok:
				t.Errorf("%s: top-level key %q is not in the docs/validate.md table", name, top)
			case p != top && !row[k] && !(top == "empirical" && agreementDoc[k]) && !(top == "input_problems" && (k == "file" || k == "line" || k == "error")):
				t.Errorf("%s: key %s is not documented in the docs/validate.md row of %q", name, p, top)
			}
		}
		for p := range fullPaths {
			if name == "refined" { // one run directory: no grounded record, no bad line
				break
			}
			if _, ok := paths[p]; !ok && !hiddenBy(p, paths) {
				t.Errorf("%s: key %s is missing (not under a null or an empty list)", name, p)
			}
		}
	}
	for top, keys := range doc {
		if top == "tool" || top == "spec_version" { // their rows describe a value
			continue
		}
		for k := range keys {
			if !slices.ContainsFunc(all, func(p string) bool { return strings.HasPrefix(p, top) && lastKey(p) == k }) {
				t.Errorf("docs/validate.md documents %q under %q; no report has such a key", k, top)
			}
		}
	}
	nulls := map[string][]string{
		"bare": {"validity.overall.rate", "pass_rates.mean", "pass_rates.median", "pass_rates.rollouts_per_record", "empirical", "rollouts.completion_tokens"},
		"empty": {"counts[].mean_words_per_item", "counts[].total.share", "provenance.created_first", "provenance.created_last",
			"rollouts.completion_tokens.mean", "rollouts.completion_tokens.median", "rollouts.completion_tokens.p90",
			"rollouts.completion_tokens.max", "corpus.manifest_fingerprint", "corpus.export_format"},
		"verl": {"pass_rates", "rollouts", "usage", "provenance"},
	}
	for name, ps := range nulls {
		for _, p := range ps {
			if k := outputs[name][p]; k != "null" {
				t.Errorf("%s: %s is %s; it cannot be computed from this input, so it is null", name, p, orMissing(k))
			}
		}
	}
}

// keyJudges are a panel of the simulated judges of synthcorpus.AddPanel.
var keyJudges = []synthcorpus.PanelJudge{{Name: "a", Model: "m-a"}, {Name: "b", Model: "m-b", FalseValid: 0.3}, {Name: "c", Model: "m-c", Fail: 0.2}}

// verlRow holds the columns of a verl export file that validate reads.
type verlRow struct {
	Label     string `parquet:"label"`
	ExtraInfo struct {
		Split string `parquet:"split"`
	} `parquet:"extra_info"`
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func orMissing(k string) string {
	if k == "" {
		return "missing"
	}
	return fmt.Sprintf("a %s", k)
}

// TestAgreementJSONDocumented: rejudge and agreement print the same
// top-level keys (the other command's sections null), every key is in the
// list in docs/validate-agreement.md, and every listed key is in one of them.
func TestAgreementJSONDocumented(t *testing.T) {
	t.Parallel()
	doc := documentedAgreement(t, validateDocs(t))
	_, url, stop, err := sim.Start(sim.Config{Seed: 2, InvalidRate: 0.3, PrefixCache: sim.PrefixCache{On: true}}) // a prefix cache: cached_prompt_tokens reported
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeRun(t, 20, nil)
	code, stdout, stderr := validate(t, nil, "rejudge", dir, "--base-url", url, "--model", "simulated", "--sample", "30",
		"--cache", "", "--json")
	if code != exitOK {
		t.Fatalf("rejudge: exit %d: %s", code, stderr)
	}
	rejudged := reportPaths(t, stdout)
	panel := filepath.Join(t.TempDir(), "panel.yaml")
	os.WriteFile(panel, []byte("- model: simulated\n- model: other\n"), 0o644)
	code, stdout, stderr = validate(t, nil, "rejudge", dir, "--panel", panel, "--base-url", url, "--order-check", "5",
		"--cache", "", "--json")
	if code != exitOK {
		t.Fatalf("rejudge --panel --order-check: exit %d: %s", code, stderr)
	}
	paneled := reportPaths(t, stdout)
	sheet := filepath.Join(t.TempDir(), "items.csv")
	if code, _, stderr := validate(t, nil, "sample", dir, "--n", "10", "--out", sheet); code != exitOK {
		t.Fatalf("sample: exit %d: %s", code, stderr)
	}
	rows := readCSV(t, sheet)
	for _, row := range rows[1:] {
		row[7] = "invalid"
	}
	writeCSV(t, sheet, rows)
	code, stdout, stderr = validate(t, nil, "agreement", dir, "--human", sheet, "--json")
	if code != exitOK {
		t.Fatalf("agreement: exit %d: %s", code, stderr)
	}
	agreed := reportPaths(t, stdout)

	seen := map[string]bool{}
	for name, paths := range map[string]map[string]string{"rejudge": rejudged, "agreement": agreed, "panel": paneled} {
		for p := range paths {
			k := lastKey(p)
			seen[k] = true
			if !doc[k] && !(strings.HasPrefix(p, "input_problems") && (k == "file" || k == "line" || k == "error")) {
				t.Errorf("%s: key %s is not in the list in docs/validate-agreement.md", name, p)
			}
			if !strings.Contains(p, ".") {
				if _, ok := map[string]map[string]string{"rejudge": agreed, "agreement": rejudged, "panel": agreed}[name][p]; !ok {
					t.Errorf("top-level key %q is in the %s report only", p, name)
				}
			}
		}
	}
	for k := range doc {
		if !seen[k] {
			t.Errorf("docs/validate-agreement.md lists %q; neither report has it", k)
		}
	}
}

// reviewedRun is a demo-like run two reviewers reviewed: decisions on
// judged items by both, and a flag.
func reviewedRun(t *testing.T) string {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 2); err != nil {
		t.Fatal(err)
	}
	fp := mustFingerprint(t, run)
	recs, _ := reviewtest.Records(2)
	for _, who := range []string{"alice", "bob"} {
		l, err := review.OpenLog(review.LogPath(run, who), who, fp, run, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range recs[0].Rubric {
			act := review.ActionAccept
			if it.ID == 3 && who == "alice" {
				act = review.ActionReject
			}
			l.Append(review.Entry{Time: time.Now(), Record: recs[0].ID, Item: it.ID, Action: act, Before: &review.ItemState{Type: it.Type, Text: it.Text, Weight: it.Weight}})
		}
		l.Append(review.Entry{Time: time.Now(), Record: recs[1].ID, Action: review.ActionFlag, Reason: "a second look"})
		l.Close()
	}
	return run
}
