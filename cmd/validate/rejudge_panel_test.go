package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestRejudgePanelCommand: --panel asks every judge of the file (the
// flags fill in what a judge leaves out), prices each with --price, and
// the JSON carries the panel's section; --order-check adds the flip rates.
func TestRejudgePanelCommand(t *testing.T) {
	t.Parallel()
	srv, url, stop, err := sim.Start(sim.Config{Seed: 2, InvalidRate: 0.3, Judges: map[string]sim.JudgeProfile{
		"small": {FalseValid: 0.3, FalseInvalid: 0.1, FirstBias: 0.5},
		"large": {FalseValid: 0.05, FalseInvalid: 0.05},
		"flaky": {Fail: 0.5},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeRun(t, 20, nil)
	panel := filepath.Join(t.TempDir(), "panel.yaml")
	os.WriteFile(panel, []byte("- name: small\n  model: small\n- model: large\n  api_key_env: LARGE_KEY\n"), 0o644)
	env := map[string]string{"LARGE_KEY": "sk-large-secret-7"}
	args := []string{"rejudge", dir, "--panel", panel, "--base-url", url, "--sample", "30", "--seed", "4", "--cache", "",
		"--price", "small=0.1,0.2", "--price", "large=2,8", "--max-cost-usd", "10", "--json"}
	code, stdout, stderr := validate(t, env, args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout+stderr, "sk-large-secret") {
		t.Error("a judge's API key reached the output")
	}
	var rep struct {
		Sample struct{ Judged, Records int }
		Panel  struct {
			Judges []struct {
				Name     string
				Answered int64
				LLM      struct {
					Requests int64   `json:"requests"`
					CostUSD  float64 `json:"cost_usd"`
				} `json:"llm"`
			}
			InterJudge []struct{ Type string } `json:"inter_judge"`
			ValidRates []struct {
				Type  string
				Panel struct{ Interval *struct{ Low, High float64 } }
			} `json:"valid_rates"`
		}
		OrderCheck *struct{ Records int } `json:"order_check"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	p := rep.Panel
	if rep.Sample.Judged != 30 || len(p.Judges) != 2 || p.Judges[1].Name != "large" || rep.OrderCheck != nil {
		t.Fatalf("report %+v", rep)
	}
	for _, j := range p.Judges {
		if j.Answered != 30 || j.LLM.Requests != int64(rep.Sample.Records) || j.LLM.CostUSD <= 0 {
			t.Errorf("judge %+v; want every item answered, one request per record, a cost", j)
		}
	}
	if len(p.InterJudge) < 2 || p.InterJudge[0].Type != "all" || p.ValidRates[0].Panel.Interval == nil {
		t.Errorf("panel section %+v", p)
	}
	if srv.Count() != 2*int64(rep.Sample.Records) {
		t.Errorf("the endpoint saw %d requests for %d records and two judges", srv.Count(), rep.Sample.Records)
	}

	code, stdout, stderr = validate(t, env, "rejudge", dir, "--panel", panel, "--base-url", url, "--order-check", "5", "--cache", "")
	if code != exitOK || !strings.Contains(stdout, "Order check: ") || !strings.Contains(stdout, "Judge panel: 2 judges") {
		t.Errorf("order check: exit %d\n%s%s", code, stdout, stderr)
	}

	// A judge that fails on some records: the panel still judges every
	// item (its failures are votes against), and the exit is 3 naming it.
	flaky := filepath.Join(t.TempDir(), "flaky.yaml")
	os.WriteFile(flaky, []byte("- model: small\n- model: large\n- model: flaky\n"), 0o644)
	code, _, stderr = validate(t, env, "rejudge", dir, "--panel", flaky, "--base-url", url, "--sample", "30", "--seed", "4", "--cache", "", "--repairs", "0")
	if code != exitPartial || !strings.Contains(stderr, "judge flaky gave no verdict on") {
		t.Errorf("a failing judge: exit %d, want %d:\n%s", code, exitPartial, stderr)
	}
}

// TestRejudgePanelUsage: a bad panel file or an unpriced judge under a
// budget is a usage error (exit 2) that names the file, the judge and what
// is wrong, before anything is sent.
func TestRejudgePanelUsage(t *testing.T) {
	t.Parallel()
	dir := writeRun(t, 5, nil)
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "panel.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown setting", []string{"--panel", write("- model: a\n  modle: b\n")}, []string{"validate rejudge: panel file ", "panel.yaml:\n  [0].modle (line 2): unknown setting"}},
		{"one judge", []string{"--panel", write("- model: a\n")}, []string{"panel file ", "\n  a panel needs at least two judges (to ask one judge, leave the panel out and set its model in --model)"}},
		{"same name twice", []string{"--panel", write("- model: a\n- name: a\n  model: b\n")}, []string{`[1]: name "a" is also [0]'s`}},
		{"no endpoint", []string{"--panel", write("- model: a\n- model: b\n")}, []string{"panel.yaml:\n  [0] (a): no base_url (set it here or give --base-url)"}},
		{"missing file", []string{"--panel", filepath.Join(t.TempDir(), "none.yaml")}, []string{"panel file ", "none.yaml:\n  cannot read it"}},
		{"unpriced judge", []string{"--panel", write("- model: a\n- model: b\n"), "--base-url", "http://127.0.0.1:1/v1",
			"--price", "a=1,2", "--max-cost-usd", "1"}, []string{"without a price for b"}},
		{"bad price", []string{"--base-url", "http://127.0.0.1:1/v1", "--model", "a", "--price", "a=1"}, []string{"MODEL=PROMPT,COMPLETION"}},
		{"negative order check", []string{"--base-url", "http://127.0.0.1:1/v1", "--model", "a", "--order-check", "-1"}, []string{"--order-check"}},
	}
	for _, c := range cases {
		code, _, stderr := validate(t, nil, append([]string{"rejudge", dir}, c.args...)...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d: %s", c.name, code, exitUsage, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: the message does not say %q:\n%s", c.name, w, stderr)
			}
		}
	}
}
