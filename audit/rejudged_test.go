package audit

import "testing"

// TestPanelVerdictsFailClosed: the panel's verdict on each item of a group
// is a strict majority of the judges that were asked, a failed judge a
// vote against; a 1-1 split with a failure, and a tie, are invalid
// whatever the judges' order; a group some judge was never asked about
// (a budget stop) or every judge failed on gets no verdict.
func TestPanelVerdictsFailClosed(t *testing.T) {
	t.Parallel()
	g := []SampleItem{{RecordID: "r", ItemID: 0, Type: "ANSWER", Stored: ptr(true)}}
	said := func(valid bool) JudgeAnswer {
		return JudgeAnswer{Asked: true, Items: []ComparedItem{{RecordID: "r", Type: "ANSWER", Stored: true, Other: valid}}}
	}
	failed := JudgeAnswer{Asked: true}
	never := JudgeAnswer{}
	cases := []struct {
		name    string
		answers []JudgeAnswer
		ok      bool
		valid   bool
	}{
		{"1-1 split and a failure", []JudgeAnswer{said(true), said(false), failed}, true, false},
		{"a failure, then a 1-1 split", []JudgeAnswer{failed, said(true), said(false)}, true, false},
		{"2-1", []JudgeAnswer{said(true), said(false), said(true)}, true, true},
		{"two valid and a failure", []JudgeAnswer{said(true), failed, said(true)}, true, true},
		{"tie of two, valid first", []JudgeAnswer{said(true), said(false)}, true, false},
		{"tie of two, invalid first", []JudgeAnswer{said(false), said(true)}, true, false},
		{"one valid, two failures", []JudgeAnswer{said(true), failed, failed}, true, false},
		{"every judge failed", []JudgeAnswer{failed, failed, failed}, false, false},
		{"a judge never asked", []JudgeAnswer{said(true), said(true), never}, false, false},
	}
	for _, c := range cases {
		items, ok := panelVerdicts(g, c.answers)
		if ok != c.ok || (ok && items[0].pair.Other != c.valid) {
			t.Errorf("%s: ok %v, verdict %v; want ok %v, valid %v", c.name, ok, items, c.ok, c.valid)
		}
	}
}
