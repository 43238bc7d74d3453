package reward

import (
	"regexp"
	"testing"
	"unicode/utf8"
)

func TestSteps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		text     string
		want     []StepSpan
		formatOK bool
	}{
		{"no headers", "Just an answer: <answer>5</answer>", nil, false},
		{"preamble belongs to no step", "Intro\n### Step 1: a\nx\n### Step 2: b\n<answer>5</answer>",
			[]StepSpan{{1, 6, 22, 6, 22}, {2, 22, 54, 22, 54}}, true},
		{"code points and bytes differ", "é\n### Step 1: π=3.14\n## Step 2: done \\boxed{π}",
			[]StepSpan{{1, 2, 21, 3, 23}, {2, 21, 46, 23, 49}}, true},
		{"header variants", "  #### Step 10 :x\n###Step 2:\n\t## Step  3\t:", []StepSpan{{1, 0, 18, 0, 18}, {2, 18, 29, 18, 29}, {3, 29, 42, 29, 42}}, false},
		{"not headers", "##### Step 1:\n# Step 1:\n### Step:\n### Step1:\n### step 1:\n### Step 1\nx ### Step 2:", nil, false},
		{"steps without an answer tag", "### Step 1: work\n", []StepSpan{{1, 0, 17, 0, 17}}, false},
		{"an unclosed answer tag", "### Step 1: work\n<answer>5", []StepSpan{{1, 0, 26, 0, 26}}, false},
		{"CRLF lines", "### Step 1: a\r\n### Step 2: b\r\n", []StepSpan{{1, 0, 15, 0, 15}, {2, 15, 30, 15, 30}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Steps(tc.text)
			if len(got) != len(tc.want) {
				t.Fatalf("Steps = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("span %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if ok := FormatOK(tc.text, got); ok != tc.formatOK {
				t.Errorf("FormatOK = %v, want %v", ok, tc.formatOK)
			}
		})
	}
}

// headerOracle is the step header rule (schema.IsStepHeader) written
// independently as a regular expression, the oracle FuzzSteps checks the
// spans against.
var headerOracle = regexp.MustCompile(`(?m)^[ \t]*#{2,4}[ \t]*Step[ \t]+\d+[ \t]*:`)

func FuzzSteps(f *testing.F) {
	for _, s := range []string{"", "### Step 1: a\n### Step 2: b", "é\n## Step 3 : x", "#####Step 1:", "\n\n### Step 12:\r\n", "\xff### Step 1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spans := Steps(text)
		starts := headerOracle.FindAllStringIndex(text, -1)
		if len(spans) != len(starts) {
			t.Fatalf("%d spans, the regular expression finds %d headers in %q", len(spans), len(starts), text)
		}
		for i, sp := range spans {
			if sp.Step != int32(i+1) || sp.ByteStart != starts[i][0] {
				t.Fatalf("span %d = %+v, header at %d", i, sp, starts[i][0])
			}
			if sp.ByteEnd < sp.ByteStart || sp.CharEnd < sp.CharStart {
				t.Fatalf("span %d is reversed: %+v", i, sp)
			}
			if i > 0 && spans[i-1].ByteEnd != sp.ByteStart {
				t.Fatalf("spans %d and %d are not contiguous: %+v %+v", i-1, i, spans[i-1], sp)
			}
			if c := utf8.RuneCountInString(text[:sp.ByteStart]); c != sp.CharStart {
				t.Fatalf("span %d starts at code point %d, want %d", i, sp.CharStart, c)
			}
			if c := utf8.RuneCountInString(text[:sp.ByteEnd]); c != sp.CharEnd {
				t.Fatalf("span %d ends at code point %d, want %d", i, sp.CharEnd, c)
			}
		}
		if n := len(spans); n > 0 && spans[n-1].ByteEnd != len(text) {
			t.Fatalf("the last span ends at %d, the text at %d", spans[n-1].ByteEnd, len(text))
		}
	})
}
