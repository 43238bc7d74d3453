package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
)

// labelledSheet draws a sheet of n items from dir and labels it as people
// would: the stored verdict, except on every fourth row, where they
// disagree.
func labelledSheet(t *testing.T, dir string, n string) string {
	t.Helper()
	return labelledSheetAt(t, filepath.Join(t.TempDir(), "items.csv"), dir, n)
}

// labelledSheetAt is labelledSheet written to sheet.
func labelledSheetAt(t *testing.T, sheet, dir string, n string) string {
	t.Helper()
	if code, _, stderr := validate(t, nil, "sample", dir, "--n", n, "--seed", "3", "--out", sheet); code != exitOK {
		t.Fatalf("sample: exit %d: %s", code, stderr)
	}
	rows := readCSV(t, sheet)
	head := rows[0]
	col := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("the sheet has no %s column", name)
		return -1
	}
	rid, iid, hv := col("record_id"), col("item_id"), col("human_valid")
	for n, row := range rows[1:] {
		var i, k int
		if _, err := fmt.Sscanf(row[rid]+" "+row[iid], "r%d %d", &i, &k); err != nil {
			t.Fatal(err)
		}
		people := storedValid(i, k-1) != (n%4 == 0)
		row[hv] = map[bool]string{true: "valid", false: "invalid"}[people]
	}
	writeCSV(t, sheet, rows)
	return sheet
}

// section is the text report's validity-with-intervals section: from its
// heading to the next heading or the end.
func section(report, heading string) string {
	at := strings.Index(report, "\n"+heading)
	if at < 0 {
		return ""
	}
	s := report[at+1:]
	for _, next := range []string{"\nInput problems", "\nUnavailable", "\nGrounded"} {
		if i := strings.Index(s, next); i >= 0 {
			s = s[:i]
		}
	}
	return s
}

// TestHumanSheetCorrectsRates: validate --human prints the judge's
// sensitivity and specificity against the people's labels and the
// corrected rates with their intervals (golden text); without --human the
// same corpus gets Wilson intervals (golden text); the JSON holds the same
// figures.
func TestHumanSheetCorrectsRates(t *testing.T) {
	t.Parallel()
	dir, sheet := sharedLabelledSheet(t, 100, "120")
	code, stdout, stderr := validate(t, nil, dir, "--human", sheet)
	if code != exitOK {
		t.Fatalf("validate --human: exit %d: %s", code, stderr)
	}
	got := strings.ReplaceAll(section(stdout, "Validity corrected"), sheet, "items.csv")
	golden.Check(t, filepath.Join("testdata", "human.txt"), []byte(got))

	code, stdout, _ = validate(t, nil, dir)
	if code != exitOK {
		t.Fatalf("validate: exit %d", code)
	}
	golden.Check(t, filepath.Join("testdata", "wilson.txt"), []byte(section(stdout, "Validity with 95%")))

	_, stdout, _ = validate(t, nil, dir, "--human", sheet, "--json")
	var rep struct {
		Reliability struct {
			Method  string
			Overall struct {
				Labelled    int64    `json:"labelled"`
				Corrected   *float64 `json:"corrected_rate"`
				Sensitivity *float64 `json:"sensitivity"`
				Specificity *float64 `json:"specificity"`
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	o := rep.Reliability.Overall
	if rep.Reliability.Method != "rogan-gladen" || o.Labelled != 120 || o.Corrected == nil || o.Sensitivity == nil || o.Specificity == nil {
		t.Errorf("JSON reliability %+v; want the corrected overall rate of 120 labelled items", rep.Reliability)
	}
}

// TestGateOnFlag: --gate-on lower makes --min-validity (or its other name
// --min-valid-rate) check the lower bound of the overall interval; the
// default checks the rate as before. A threshold between the two passes
// the one and fails the other.
func TestGateOnFlag(t *testing.T) {
	t.Parallel()
	dir, sheet := sharedLabelledSheet(t, 30, "40")
	_, stdout, _ := validate(t, nil, dir, "--human", sheet, "--json")
	var rep struct {
		Reliability struct {
			Overall struct {
				Rate     float64 `json:"rate"`
				Interval struct {
					Low float64 `json:"low"`
				} `json:"rate_interval"`
				Corrected struct {
					Low float64 `json:"low"`
				} `json:"corrected_interval"`
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	o := rep.Reliability.Overall
	wilson := fmtRate((o.Interval.Low + o.Rate) / 2)
	corrected := fmtRate(o.Corrected.Low + 0.005)
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"rate passes", []string{"--min-validity", wilson}, exitOK, ""},
		{"rate passes, other name", []string{"--min-valid-rate", wilson}, exitOK, ""},
		{"Wilson lower bound fails", []string{"--min-validity", wilson, "--gate-on", "lower"}, exitFailed, "Wilson"},
		{"other name, lower bound", []string{"--min-valid-rate", wilson, "--gate-on", "lower"}, exitFailed, "Wilson"},
		{"corrected lower bound fails", []string{"--min-validity", corrected, "--gate-on", "lower", "--human", sheet}, exitFailed, "corrected"},
		{"not a mode", []string{"--min-validity", "0.5", "--gate-on", "upper"}, exitUsage, "rate or lower"},
	}
	for _, tt := range tests {
		code, _, stderr := validate(t, nil, append([]string{dir}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.says) {
			t.Errorf("%s: exit %d, want %d; stderr %q should say %q", tt.name, code, tt.code, stderr, tt.says)
		}
	}
}

// TestHumanSheetProblems: a sheet that is not one is a usage error naming
// the file; a sheet that compares nothing (no rows, or drawn from another
// corpus) leaves the rates uncorrected, says so and exits 3.
func TestHumanSheetProblems(t *testing.T) {
	t.Parallel()
	dir := sharedRun(t, 20)
	bad := filepath.Join(t.TempDir(), "notes.csv")
	writeCSV(t, bad, [][]string{{"record", "verdict"}, {"r001", "valid"}})
	code, stdout, stderr := validate(t, nil, dir, "--human", bad)
	if code != exitUsage || !strings.Contains(stderr, "notes.csv") || !strings.Contains(stderr, "record_id") || stdout != "" {
		t.Errorf("a sheet without its columns: exit %d, want %d; stderr %q should name the file and the missing column", code, exitUsage, stderr)
	}
	empty := filepath.Join(t.TempDir(), "empty.csv")
	writeCSV(t, empty, [][]string{{"record_id", "item_id", "human_valid"}})
	code, _, stderr = validate(t, nil, dir, "--human", empty)
	if code != exitPartial || !strings.Contains(stderr, "no rows") || !strings.Contains(stderr, "not corrected") {
		t.Errorf("a sheet of no rows: exit %d, want %d; stderr %q", code, exitPartial, stderr)
	}
	sheet := labelledSheet(t, dir, "10")
	rows := readCSV(t, sheet)
	for _, row := range rows[1:] {
		row[1] = "other-" + row[1]
	}
	writeCSV(t, sheet, rows)
	code, stdout, stderr = validate(t, nil, dir, "--human", sheet)
	if code != exitPartial || !strings.Contains(stderr, "another corpus") || !strings.Contains(stderr, "not corrected") {
		t.Errorf("a foreign sheet: exit %d, want %d; stderr %q", code, exitPartial, stderr)
	}
	if !strings.Contains(stdout, "people labelled no item") {
		t.Errorf("the report does not say why nothing is corrected:\n%s", section(stdout, "Validity corrected"))
	}
}

func fmtRate(x float64) string { return fmt.Sprintf("%.4f", x) }

// TestGroundedGateOnLower: a grounded corpus has no rubric items to
// correct, but its criteria's rate (3 of 4 valid) still has a Wilson
// interval (30.1-95.4%) for the lower-bound gate; --human on it says the
// rates are not corrected and exits 3.
func TestGroundedGateOnLower(t *testing.T) {
	t.Parallel()
	dir := writeGroundedRun(t)
	if code, _, stderr := validate(t, nil, dir, "--min-validity", "0.5"); code != exitOK {
		t.Errorf("rate 0.75 against 0.5: exit %d: %s", code, stderr)
	}
	code, _, stderr := validate(t, nil, dir, "--min-validity", "0.5", "--gate-on", "lower")
	if code != exitFailed || !strings.Contains(stderr, "Wilson interval is 0.3006") {
		t.Errorf("lower bound 0.3006 against 0.5: exit %d, want %d; stderr %q", code, exitFailed, stderr)
	}
	sheet := filepath.Join(t.TempDir(), "items.csv")
	writeCSV(t, sheet, [][]string{{"record_id", "item_id", "human_valid"}, {"g000", "1", "valid"}})
	code, _, stderr = validate(t, nil, dir, "--human", sheet)
	if code != exitPartial || !strings.Contains(stderr, "grounded") || !strings.Contains(stderr, "not corrected") {
		t.Errorf("--human on a grounded corpus: exit %d, want %d; stderr %q", code, exitPartial, stderr)
	}
}
