package verify

import "testing"

// TestExtractRound3 runs testdata/extract3.tsv (issue 18): a text cut off mid-solution gives
// no answer; a conclusion followed by chat-template junk gives its value; a solution led by
// its choice letter gives that letter. At least a third of the rows must give no answer.
func TestExtractRound3(t *testing.T) {
	t.Parallel()
	var cases []extractCase
	for _, r := range tsvRows(t, "testdata/extract3.tsv", "ok<TAB>want<TAB>text", 3, 3) {
		cases = append(cases, extractCase{line: r.line, ok: r.cols[0] == "1", want: r.cols[1], text: unescapeNL(r.cols[2])})
	}
	none := 0
	for _, c := range cases {
		got, method, ok := ExtractMethod(c.text)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("line %d: ExtractMethod(%q) = %q (%s), %v; want %q, %v", c.line, c.text, got, method, ok, c.want, c.ok)
		}
		if !c.ok {
			none++
		}
	}
	t.Logf("%d cases, %d without an answer", len(cases), none)
	if 3*none < len(cases) {
		t.Errorf("only %d of %d cases give no answer; want at least a third", none, len(cases))
	}
}
