package audit

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// TestKappaByHand checks Cohen's kappa against values worked out by hand:
// p_o = (both valid + both invalid) / n; p_e = p_a * p_b + (1 - p_a)(1 - p_b)
// with p_a, p_b each side's rate of "valid"; kappa = (p_o - p_e) / (1 - p_e).
func TestKappaByHand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		c         confusion // [a][b], 0 valid, 1 invalid
		agreement float64
		kappa     *float64
		scale     string
	}{
		// p_o = 35/50 = 0.7; p_a = 25/50 = 0.5, p_b = 30/50 = 0.6; p_e = 0.3 + 0.2 = 0.5; kappa = 0.2/0.5 = 0.4
		{"textbook", confusion{{20, 5}, {10, 15}}, 0.7, ptr(0.4), "fair"},
		// p_o = 0.6; p_a = 0.6, p_b = 0.7; p_e = 0.42 + 0.12 = 0.54; kappa = 0.06/0.46
		{"slight", confusion{{45, 15}, {25, 15}}, 0.6, ptr(0.06 / 0.46), "slight"},
		// seed 000 style: p_o = 92/100; p_a = 0.9, p_b = 0.88; p_e = 0.792 + 0.012 = 0.804; kappa = 0.116/0.196
		{"high agreement", confusion{{85, 5}, {3, 7}}, 0.92, ptr(0.116 / 0.196), "moderate"},
		{"perfect", confusion{{10, 0}, {0, 5}}, 1, ptr(1.0), "almost perfect"},
		// p_o = 0; p_a = p_b = 0.5; p_e = 0.5; kappa = -1
		{"opposite", confusion{{0, 5}, {5, 0}}, 0, ptr(-1.0), "poor"},
		// everyone says valid: p_e = 1, kappa undefined
		{"constant", confusion{{12, 0}, {0, 0}}, 1, nil, "undefined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := agreementOf("a", "b", tt.c, nil)
			if a.Rate == nil || math.Abs(*a.Rate-tt.agreement) > 1e-12 {
				t.Errorf("agreement %v, want %v", fix(a.Rate, 6), tt.agreement)
			}
			switch {
			case tt.kappa == nil && a.Kappa != nil:
				t.Errorf("kappa %v, want undefined", *a.Kappa)
			case tt.kappa != nil && (a.Kappa == nil || math.Abs(*a.Kappa-*tt.kappa) > 1e-12):
				t.Errorf("kappa %v, want %v", fix(a.Kappa, 6), *tt.kappa)
			}
			if a.Scale != tt.scale {
				t.Errorf("scale %q, want %q", a.Scale, tt.scale)
			}
			if a.BothValid+a.BothInvalid+a.OnlyAValid+a.OnlyBValid != a.Items {
				t.Errorf("confusion counts do not add up to %d: %+v", a.Items, a)
			}
		})
	}
}

// TestHumanAgreement draws a sheet, fills it in as a person would (agreeing
// with the stored verdict except on chosen rows, leaving some blank,
// editing one item's text), and checks every count against the rows.
func TestHumanAgreement(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:30], 8)
	in, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	items, _, _, err := Sample(context.Background(), in, 40, 7, true)
	if err != nil || len(items) != 40 {
		t.Fatalf("Sample: %d items, %v", len(items), err)
	}
	var sheet bytes.Buffer
	if err := WriteSheet(&sheet, items); err != nil {
		t.Fatal(err)
	}
	anns, err := ReadSheet(&sheet, "items.csv")
	if err != nil {
		t.Fatal(err)
	}
	var want confusion
	var blank, changed int
	for i := range anns {
		a := &anns[i]
		stored := *items[i].Stored
		switch {
		case i%10 == 3:
			blank++
			continue
		case i == 5:
			a.Text += " (edited)"
			changed++
		case i%4 == 1:
			v := !stored
			a.Verdict = &v
		default:
			v := stored
			a.Verdict = &v
		}
		if i != 5 {
			want.add(stored, *a.Verdict)
		} else {
			v := true
			a.Verdict = &v
		}
	}
	anns = append(anns, Annotation{Line: 99, RecordID: "no-such-record", ItemID: 1, Verdict: ptr(true)})
	rep, err := HumanAgreement(context.Background(), in, anns, "items.csv")
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Sheet
	if s.Rows != 41 || s.Blank != blank || s.Changed != changed || s.Missing != 1 {
		t.Errorf("sheet %+v; want 41 rows, %d blank, %d changed, 1 missing", s, blank, changed)
	}
	a := rep.Agreement
	if a.Items != want.n() || a.Agree != want.agree() || a.BothValid != want[0][0] || a.OnlyAValid != want[0][1] ||
		a.OnlyBValid != want[1][0] || a.BothInvalid != want[1][1] {
		t.Errorf("agreement %+v; want confusion %v", a, want)
	}
	if k, wk := a.Kappa, want.kappa(); (k == nil) != (wk == nil) || (k != nil && *k != *wk) {
		t.Errorf("kappa %v, want %v", fix(k, 4), fix(wk, 4))
	}
	if int64(len(rep.Disagreements)) != a.Items-a.Agree {
		t.Errorf("%d disagreements listed, %d counted", len(rep.Disagreements), a.Items-a.Agree)
	}
	text := string(render(t, rep.WriteText))
	for _, s := range []string{"validity Cohen's kappa", "people: valid", "stored judge: invalid"} {
		if !strings.Contains(text, s) {
			t.Errorf("text report lacks %q:\n%s", s, text)
		}
	}
}

func TestReadSheetErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, csv, says string
	}{
		{"no verdict column", "record_id,item_id\np1,1\n", `no "human_valid" column`},
		{"bad verdict", "record_id,item_id,human_valid\np1,1,valid\np1,2,maybe\n", "items.csv line 3, column human_valid"},
		{"bad item id", "record_id,item_id,human_valid\np1,x,valid\n", "line 2, column item_id"},
		{"duplicate row", "record_id,item_id,human_valid\np1,1,valid\np1,1,no\n", "annotated again (first on line 2)"},
		{"verdict without item", "record_id,item_id,human_valid\n,,yes\n", "needs both record_id and item_id"},
		{"broken quotes", "record_id,item_id,human_valid\n\"p1,1,valid\n", "line"},
		{"empty file", "", "header row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSheet(strings.NewReader(tt.csv), "items.csv")
			if !errors.Is(err, ErrSheet) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("ReadSheet: %v; want ErrSheet saying %q", err, tt.says)
			}
		})
	}
	anns, err := ReadSheet(strings.NewReader("\ufeffItem_ID,RECORD_ID,human_valid,human_note\n3,p1, Yes ,ok\n4,p1,,\n,,,\n5,p1,0,\n"), "x.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(anns) != 3 || *anns[0].Verdict != true || anns[1].Verdict != nil || *anns[2].Verdict != false || anns[0].ItemID != 3 || anns[0].Line != 2 {
		t.Errorf("annotations %+v", anns)
	}
}

func FuzzReadSheet(f *testing.F) {
	f.Add("record_id,item_id,human_valid\np1,1,valid\np1,2,\n")
	f.Add("sample,record_id,item_id,type,item,problem,ground_truth,human_valid,human_note\n1,a,1,SUGGEST,\"x\ny\",p,1,no,\n")
	f.Add("record_id,item_id,human_valid\n\"p1,1,valid\n")
	f.Add("\ufeffrecord_id;item_id;human_valid\n")
	f.Fuzz(func(t *testing.T, s string) {
		anns, err := ReadSheet(strings.NewReader(s), "f.csv")
		if err != nil {
			if !errors.Is(err, ErrSheet) || !strings.HasPrefix(err.Error(), "f.csv line ") {
				t.Fatalf("error %q does not wrap ErrSheet with a line", err)
			}
			return
		}
		seen := map[[2]any]bool{}
		for _, a := range anns {
			if a.RecordID == "" || a.ItemID < 1 || a.Line < 2 {
				t.Fatalf("annotation without an item: %+v", a)
			}
			k := [2]any{a.RecordID, a.ItemID}
			if seen[k] {
				t.Fatalf("duplicate annotation %+v", a)
			}
			seen[k] = true
		}
	})
}
