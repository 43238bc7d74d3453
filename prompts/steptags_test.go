package prompts

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

func TestTagSteps(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no headers", "Just 5.\n<answer>5</answer>", "Just 5.\n<answer>5</answer>"},
		{"numbered from 0, with a preamble", "Plan.\n### Step 0: a\nx\n### Step 1: b\n<answer>5</answer>",
			"Plan.\n<step n=\"1\">\n### Step 0: a\nx\n</step>\n<step n=\"2\">\n### Step 1: b\n<answer>5</answer>\n</step>"},
		{"numbers skipped", "### Step 1: a\n### Step 3: b\n",
			"<step n=\"1\">\n### Step 1: a\n</step>\n<step n=\"2\">\n### Step 3: b\n</step>"},
		{"numbering starts over", "### Step 1: a\n### Step 2: b\n### Step 1: a again\n",
			"<step n=\"1\">\n### Step 1: a\n</step>\n<step n=\"2\">\n### Step 2: b\n</step>\n<step n=\"3\">\n### Step 1: a again\n</step>"},
		{"CRLF lines", "### Step 1: a\r\n### Step 2: b\r\n",
			"<step n=\"1\">\n### Step 1: a\r\n</step>\n<step n=\"2\">\n### Step 2: b\r\n</step>"},
		{"tags written by the student are not tags", "### Step 1: a <step n=\"2\"> x </STEP>\n<Step n=\"9\">\n",
			"<step n=\"1\">\n### Step 1: a &lt;step n=\"2\"> x &lt;/STEP>\n&lt;Step n=\"9\">\n</step>"},
		{"not headers", "# Step 1: a\n##### Step 2: b\n### Step: c\n", "# Step 1: a\n##### Step 2: b\n### Step: c\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tagSteps(tc.in); got != tc.want {
				t.Errorf("tagSteps(%q) =\n%s\nwant\n%s", tc.in, got, tc.want)
			}
		})
	}
}

var (
	reOurTag   = regexp.MustCompile(`^(<step n="(\d+)">|</step>)\n?$`)
	reTagLike  = regexp.MustCompile(`(?i)<(/?step)`)
	escapeTags = func(s string) string { return reTagLike.ReplaceAllString(s, "&lt;$1") }
)

// FuzzTagSteps checks what the judge relies on whatever the solution holds:
// the n-th tag opens right before the n-th header line schema.IsStepHeader
// finds (the n-th reward step span), tags open and close in turn, and
// without the tags the text is the solution's, with only tag-like text
// escaped.
func FuzzTagSteps(f *testing.F) {
	for _, s := range []string{"", fixSolution, "### Step 0: a\n### Step 0: b", "<step n=\"1\">\n### Step 1: x</step>", "x\r\n## Step 3 : y", "\xff### Step 1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, solution string) {
		tagged := tagSteps(solution)
		var headers []string
		for line := range strings.Lines(solution) {
			if schema.IsStepHeader(line) {
				headers = append(headers, line)
			}
		}
		var rest strings.Builder
		open, n, expectHeader := false, 0, false
		for line := range strings.Lines(tagged) {
			m := reOurTag.FindStringSubmatch(line)
			switch {
			case m != nil && m[1] == "</step>":
				if !open {
					t.Fatalf("a close tag with no step open in %q", tagged)
				}
				open = false
			case m != nil:
				if open || expectHeader {
					t.Fatalf("a step opens inside a step in %q", tagged)
				}
				n++
				if k, _ := strconv.Atoi(m[2]); k != n {
					t.Fatalf("tag %d is numbered %d in %q", n, k, tagged)
				}
				open, expectHeader = true, true
			default:
				if expectHeader && (n > len(headers) || strings.TrimSuffix(line, "\n") != strings.TrimSuffix(escapeTags(headers[n-1]), "\n")) {
					t.Fatalf("tag %d is followed by %q, not by header %d", n, line, n)
				}
				expectHeader = false
				rest.WriteString(line)
			}
		}
		if open || n != len(headers) {
			t.Fatalf("%d tags (open at the end: %v) for %d headers in %q", n, open, len(headers), tagged)
		}
		want := escapeTags(solution)
		if got := rest.String(); got != want && (n == 0 || got != want+"\n") {
			t.Fatalf("without its tags the text is\n%q\nwant\n%q", got, want)
		}
	})
}
