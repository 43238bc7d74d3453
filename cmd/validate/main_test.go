package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

func ptr[T any](v T) *T { return &v }

// storedValid is the stored verdict of item k of record i: every seventh
// item is invalid.
func storedValid(i, k int) bool { return (i*5+k)%7 != 3 }

// record is a well-formed SRaR record i with judged items and two rollouts.
func record(i int) schema.Record {
	rec := schema.Record{
		ID: fmt.Sprintf("r%03d", i), Source: "test", Split: "train", Style: schema.StyleSRaR,
		Problem: fmt.Sprintf("Find x when 3x = %d.", 3*i), Answer: fmt.Sprint(i),
		Provenance: schema.Provenance{RolloutModel: "m", DistillModel: "m", JudgeModel: ptr("m"), RolloutTemplate: "r",
			DistillTemplate: "d", JudgeTemplate: ptr("j"), EmpiricalModel: ptr("m"), SatisfyTemplate: ptr("s"), Alpha: ptr(0.2), JobFingerprint: "fp", SpecVersion: schema.SpecVersion,
			ToolVersion: "test", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		Usage: schema.Usage{Requests: 4, PromptTokens: 1000, CompletionTokens: 500, CostUSD: 0.001},
	}
	for k, typ := range []string{schema.TypeSuggest, schema.TypeSuggest, schema.TypePitfall, schema.TypeAnswer} {
		rec.Rubric = append(rec.Rubric, schema.Item{ID: int32(k + 1), Type: typ, Weight: 1, Polarity: schema.PolarityOf(typ),
			Text: fmt.Sprintf("Record %d, item %d: divides both sides by 3.", i, k+1), Valid: ptr(storedValid(i, k)), ValidReason: ptr("r")})
	}
	for j := range 2 {
		ro := schema.Rollout{Index: int32(j), Text: "### Step 1: divide by 3.", Correct: j == 0, FormatOK: true,
			FinishReason: "stop", CompletionTokens: ptr(int32(200 + j))}
		for _, it := range rec.Rubric {
			ro.Satisfaction = append(ro.Satisfaction, schema.Satisfaction{ID: it.ID, Satisfied: j == 0, Step: 1})
		}
		rec.Rollouts = append(rec.Rollouts, ro)
	}
	rec.NCorrect, rec.PassRate = 1, 0.5
	for k := range rec.Rubric {
		it := &rec.Rubric[k]
		v := reward.ItemValidity([]float64{1, 0}, []float64{1, 0}, it.Polarity, 0.2)
		it.SatRate, it.Corr, it.EmpiricalValid = v.SatRate, v.Corr, v.Valid
	}
	return rec
}

// writeRun writes records 0..n-1 (edit may change them) as a run directory.
func writeRun(t *testing.T, n int, edit func(*schema.Record)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	writeRunAt(t, dir, n, edit)
	return dir
}

// writeRunAt writes records 0..n-1 (edit may change them) as the run
// directory dir.
func writeRunAt(t *testing.T, dir string, n int, edit func(*schema.Record)) {
	t.Helper()
	r, err := corpus.Open(dir, corpus.Options{ShardRows: 10, ToolVersion: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r.SetFingerprint("fp")
	for i := range n {
		rec := record(i)
		if edit != nil {
			edit(&rec)
		}
		if err := r.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// validate runs the command in process.
func validate(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

// TestExitCodes: the gate, usage errors and damaged input each exit with
// their code and say why on stderr.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	good := sharedRun(t, 12)
	twoAnswers := writeRun(t, 12, func(r *schema.Record) {
		if r.ID == "r004" {
			r.Rubric[2].Type, r.Rubric[2].Polarity = schema.TypeAnswer, 1
		}
	})
	// every flawed rollout satisfies every item and no correct one does:
	// each record's rubric AUROC is 0 (x: 1/4 for the correct rollout, 3/4
	// for the flawed; good's records are the other way round, AUROC 1)
	inverted := writeRun(t, 12, func(r *schema.Record) {
		for j := range r.Rollouts {
			for k := range r.Rollouts[j].Satisfaction {
				r.Rollouts[j].Satisfaction[k].Satisfied = !r.Rollouts[j].Correct
			}
		}
	})
	noVerdicts := writeRun(t, 12, func(r *schema.Record) {
		for j := range r.Rollouts {
			r.Rollouts[j].Satisfaction = nil
		}
	})
	truncated := copyRun(t, good)
	shard := filepath.Join(truncated, "shards", "part-00001.parquet")
	data, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(shard, data[:len(data)/2], 0o644)

	tests := []struct {
		name string
		args []string
		code int
		says string // on stderr
	}{
		{"report", []string{good}, exitOK, ""},
		{"gate met", []string{good, "--min-validity", "0.8", "--max-violations", "0"}, exitOK, ""},
		{"validity below", []string{good, "--min-validity", "0.9"}, exitFailed, "is below --min-validity 0.9"},
		{"violations above", []string{twoAnswers, "--max-violations", "1"}, exitFailed, "2 structural violations in 1 records; --max-violations is 1"},
		{"violations within", []string{twoAnswers, "--max-violations", "2"}, exitOK, ""},
		{"violations without gate", []string{twoAnswers}, exitOK, ""},
		{"rate above 1", []string{good, "--min-validity", "95"}, exitUsage, "rate from 0 to 1"},
		{"discrimination gate met", []string{good, "--min-auroc", "1", "--max-anti-share", "0"}, exitOK, ""},
		{"auroc below", []string{inverted, "--min-auroc", "0.5"}, exitFailed, "mean rubric AUROC 0 over 12 measured records is below --min-auroc 0.5"},
		{"auroc without verdicts", []string{noVerdicts, "--min-auroc", "0.5"}, exitFailed, "run the empirical stage"},
		{"no verdicts without gate", []string{noVerdicts}, exitOK, ""},
		{"auroc above 1", []string{good, "--min-auroc", "80"}, exitUsage, "fractions from 0 to 1"},
		{"anti share above 1", []string{good, "--max-anti-share", "2"}, exitUsage, "fractions from 0 to 1"},
		{"unknown flag", []string{good, "--nope"}, exitUsage, "flag provided but not defined"},
		{"no corpus", []string{"--json"}, exitUsage, "no corpus given"},
		{"missing path", []string{filepath.Join(t.TempDir(), "nope")}, exitUsage, "nope"},
		{"truncated shard", []string{truncated}, exitPartial, "part-00001.parquet"},
		{"duplicate ids", []string{good, filepath.Join(good, "shards", "part-00000.parquet")}, exitPartial, "repeat the id"},
		{"duplicate ids fail the gate first", []string{good, good + "/shards/part-00000.parquet", "--max-violations", "0"}, exitFailed, "--max-violations"},
		{"rejudge without judge", []string{"rejudge", good}, exitUsage, "--base-url and --model"},
		{"rejudge budget without price", []string{"rejudge", good, "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--max-cost-usd", "1"}, exitUsage, "without a price"},
		{"rejudge judge seed not a number", []string{"rejudge", good, "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--judge-seed", "seven"}, exitUsage, "--judge-seed: seed \"seven\": want an integer, or none"},
		{"rejudge endpoint kind not a name", []string{"rejudge", good, "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--endpoint-kind", "vLLM"}, exitUsage, "--endpoint-kind: endpoint kind \"vLLM\""},
		{"sample n 0", []string{"sample", good, "--n", "0"}, exitUsage, "--n must be positive"},
		{"agreement without sheet", []string{"agreement", good}, exitUsage, "--human FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := validate(t, nil, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.says) {
				t.Errorf("exit %d, want %d; stderr %q should say %q", code, tt.code, stderr, tt.says)
			}
			if tt.code != exitUsage && tt.args[0] != "rejudge" && !strings.Contains(stdout, "Validity by type") {
				t.Errorf("no report on stdout:\n%s", stdout)
			}
		})
	}
}

// TestJSONKeys: --json prints the documented top-level keys.
func TestJSONKeys(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := validate(t, nil, sharedRun(t, 12), "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--json output does not parse: %v", err)
	}
	readme, err := os.ReadFile("../../docs/validate.md")
	if err != nil {
		t.Fatal(err)
	}
	for k := range got {
		if !bytes.Contains(readme, []byte("`"+k+"`")) {
			t.Errorf("JSON key %q is not documented in docs/validate.md", k)
		}
	}
}

// TestHelp: every command explains itself, with examples, on -h (exit 0).
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{}, {"rejudge"}, {"sample"}, {"agreement"}} {
		name := strings.Join(append([]string{"validate"}, cmd...), " ")
		t.Run(name, func(t *testing.T) {
			code, _, stderr := validate(t, nil, append(cmd, "-h")...)
			if code != exitOK {
				t.Errorf("exit %d", code)
			}
			for _, s := range []string{"Usage: " + name, "Example", name + " ", "Flags:", "Exit codes"} {
				if !strings.Contains(stderr, s) {
					t.Errorf("-h does not say %q:\n%s", s, stderr)
				}
			}
			lines := strings.Split(stderr, "\n")
			for i, line := range lines {
				if strings.HasPrefix(line, "  -") && (i+1 == len(lines) || len(strings.TrimSpace(lines[i+1])) < 10) {
					t.Errorf("flag without a description: %q", line)
				}
			}
		})
	}
	code, stdout, _ := validate(t, nil, "help")
	if code != exitOK || !strings.Contains(stdout, "validate rejudge") {
		t.Errorf("validate help: exit %d\n%s", code, stdout)
	}
}

// TestSampleThenAgreement draws a sheet, disagrees with the stored verdict
// on chosen rows as a person would, and checks agreement and kappa against
// the confusion counts worked out here.
func TestSampleThenAgreement(t *testing.T) {
	t.Parallel()
	dir := sharedRun(t, 30)
	sheet := filepath.Join(t.TempDir(), "items.csv")
	if code, _, stderr := validate(t, nil, "sample", dir, "--n", "40", "--seed", "9", "--out", sheet); code != exitOK {
		t.Fatalf("sample: exit %d: %s", code, stderr)
	}
	f, err := os.Open(sheet)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 41 {
		t.Fatalf("sheet: %d rows, %v", len(rows), err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	rid, iid, hv := col("record_id"), col("item_id"), col("human_valid")
	var c [2][2]float64 // [stored][human], 0 valid
	for n, row := range rows[1:] {
		var i, k int
		fmt.Sscanf(row[rid], "r%d", &i)
		fmt.Sscanf(row[iid], "%d", &k)
		stored := storedValid(i, k-1)
		human := stored != (n%5 == 0) // people disagree on every fifth row
		row[hv] = map[bool]string{true: "valid", false: "invalid"}[human]
		c[b2i(stored)][b2i(human)]++
	}
	f, _ = os.Create(sheet)
	csv.NewWriter(f).WriteAll(rows)
	f.Close()

	code, stdout, stderr := validate(t, nil, "agreement", dir, "--human", sheet, "--json")
	if code != exitOK {
		t.Fatalf("agreement: exit %d: %s", code, stderr)
	}
	var rep struct {
		Agreement struct {
			Items, Agree int64
			Rate         float64 `json:"agreement"`
			Kappa        float64 `json:"kappa"`
		} `json:"agreement"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	n := 40.0
	po := (c[0][0] + c[1][1]) / n
	pa, pb := (c[0][0]+c[0][1])/n, (c[0][0]+c[1][0])/n
	pe := pa*pb + (1-pa)*(1-pb)
	a := rep.Agreement
	if a.Items != 40 || a.Agree != 32 || a.Rate != 0.8 || abs(a.Kappa-(po-pe)/(1-pe)) > 1e-9 {
		t.Errorf("agreement %+v; want 32 of 40 (0.8), kappa %.6f from %v", a, (po-pe)/(1-pe), c)
	}
	t.Logf("confusion %v, kappa %.4f", c, a.Kappa)
}

func b2i(b bool) int {
	if b {
		return 0
	}
	return 1
}

func abs(x float64) float64 { return max(x, -x) }

// TestRejudgeCommand re-judges over loopback against the simulated
// endpoint, then again from the cache; the key never reaches the output.
func TestRejudgeCommand(t *testing.T) {
	t.Parallel()
	srv, url, stop, err := sim.Start(sim.Config{Seed: 2, InvalidRate: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeRun(t, 20, nil)
	env := map[string]string{"JUDGE_KEY": "sk-cmd-secret-42"}
	args := []string{"rejudge", dir, "--base-url", url, "--model", "simulated", "--sample", "30", "--seed", "4",
		"--cache", filepath.Join(t.TempDir(), "cache.db"), "--api-key-env", "JUDGE_KEY",
		"--price-prompt", "0.4", "--price-completion", "1.6", "--json"}
	type result struct {
		Sample    struct{ Drawn, Judged, Records int }
		Agreement struct{ Items int64 }
		LLM       struct {
			Requests  int64   `json:"requests"`
			CacheHits int64   `json:"cache_hits"`
			CostUSD   float64 `json:"cost_usd"`
		} `json:"llm"`
	}
	var runs [2]result
	for i := range runs {
		code, stdout, stderr := validate(t, env, args...)
		if code != exitOK {
			t.Fatalf("run %d: exit %d: %s", i, code, stderr)
		}
		if strings.Contains(stdout+stderr, "sk-cmd-secret") {
			t.Error("the API key reached the output")
		}
		if err := json.Unmarshal([]byte(stdout), &runs[i]); err != nil {
			t.Fatal(err)
		}
	}
	first, second := runs[0], runs[1]
	if first.Sample.Drawn != 30 || first.Sample.Judged != 30 || first.Agreement.Items != 30 {
		t.Errorf("first run %+v", first)
	}
	if first.LLM.Requests != int64(first.Sample.Records) || first.LLM.CostUSD <= 0 || srv.Count() != int64(first.Sample.Records) {
		t.Errorf("first run: usage %+v, %d records, the endpoint saw %d", first.LLM, first.Sample.Records, srv.Count())
	}
	if second.LLM.Requests != 0 || second.LLM.CacheHits != int64(first.Sample.Records) || second.LLM.CostUSD != 0 {
		t.Errorf("second run was not answered from the cache: %+v", second.LLM)
	}
	code, stdout, _ := validate(t, env, args[:len(args)-1]...)
	if code != exitOK || !strings.Contains(stdout, "Cohen's kappa") || !strings.Contains(stdout, "simulated") {
		t.Errorf("text rejudge report: exit %d\n%s", code, stdout)
	}
}

// TestRejudgeCacheDefault: without --cache, rejudge keeps its answers in the
// user's cache directory (a second run answers from it), and writes nothing
// into the current directory.
func TestRejudgeCacheDefault(t *testing.T) {
	_, url, stop, err := sim.Start(sim.Config{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeRun(t, 10, nil)
	cwd := t.TempDir()
	t.Chdir(cwd)
	env := map[string]string{"XDG_CACHE_HOME": filepath.Join(t.TempDir(), "xdg")}
	if code, _, stderr := validate(t, env, "rejudge", dir, "--base-url", url, "--model", "simulated", "--sample", "10"); code != exitOK {
		t.Fatalf("rejudge: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(env["XDG_CACHE_HOME"], "rubricforge", "rejudge-cache.db")); err != nil {
		t.Errorf("no cache in the user's cache directory: %v", err)
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("rejudge wrote %s into the current directory", entries[0].Name())
	}
	if got := defaultRejudgeCache(func(k string) string { return map[string]string{"HOME": "/home/u"}[k] }); got != "/home/u/.cache/rubricforge/rejudge-cache.db" {
		t.Errorf("with HOME alone: %s", got)
	}
}
