package rejudge

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	agreeDrawn    = regexp.MustCompile(`(?m)their (\d+) judged items$|^  sample: .* (\d+) of [\d,]+ judged items drawn`)
	agreeJudged   = regexp.MustCompile(`(?m)^  (\d+) judged, (\d+) failed$`)
	agreeCompared = regexp.MustCompile(`(?m)^  items compared +(\d+)$`)
	agreeRate     = regexp.MustCompile(`(?m)^  validity agreement rate +([\d.]+)%$`)
	agreeKappa    = regexp.MustCompile(`(?m)^  validity Cohen's kappa +(-?[\d.]+) `)
	agreeValid    = regexp.MustCompile(`(?m)^  (.+): valid +([\d.]+)%$`)
	agreeTable    = regexp.MustCompile(`(?m)^  stored judge: (valid|invalid) +(\d+) +(\d+)$`)
	agreeType     = regexp.MustCompile(`(?m)^  (SUGGEST|PITFALL|BONUS|ANSWER|CRITERION) +(\d+) +[\d.]+% `)
	agreeMembers  = regexp.MustCompile(`(?m)^  judge +model +answered +failed .*\n((?:  \S+ +\S+ +\d+ +\d+ .*\n)+)`)
	agreeMember   = regexp.MustCompile(`(?m)^  (\S+) +\S+ +(\d+) +(\d+) `)
)

// agreementDisagreements lists the ways a re-judging report's figures
// contradict each other: judged and failed items that are not the items
// drawn; a 2x2 table, a per-type split or a panel member whose items are
// not the items compared; and an agreement rate, validity rates or a
// Cohen's kappa other than the table's.
func agreementDisagreements(text string) []string {
	var out []string
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	c := agreeCompared.FindStringSubmatch(text)
	rows := agreeTable.FindAllStringSubmatch(text, -1)
	if c == nil || len(rows) != 2 {
		return []string{"no agreement table (items compared and the stored judge's two rows)"}
	}
	items := n(c[1])
	a, b, cc, d := n(rows[0][2]), n(rows[0][3]), n(rows[1][2]), n(rows[1][3])
	if a+b+cc+d != items {
		out = append(out, fmt.Sprintf("the table holds %d items, not the %d compared", a+b+cc+d, items))
	}
	var judged, failed int64
	if j := agreeJudged.FindStringSubmatch(text); j != nil {
		judged, failed = n(j[1]), n(j[2])
		if dr := agreeDrawn.FindStringSubmatch(text); dr != nil && judged+failed != n(dr[1]+dr[2]) {
			out = append(out, fmt.Sprintf("%d judged + %d failed is not the %s items drawn", judged, failed, dr[1]+dr[2]))
		}
		if judged < items {
			out = append(out, fmt.Sprintf("%d items compared of %d judged", items, judged))
		}
	}
	var byType int64
	for _, m := range agreeType.FindAllStringSubmatch(text, -1) {
		byType += n(m[2])
	}
	if byType != items {
		out = append(out, fmt.Sprintf("the types hold %d items, not the %d compared", byType, items))
	}
	pct := func(num int64) float64 { return 100 * float64(num) / float64(items) }
	off := func(printed, want, tol float64) bool { return math.Abs(printed-want) > tol }
	if r := agreeRate.FindStringSubmatch(text); r == nil || off(f(r[1]), pct(a+d), 0.051) {
		out = append(out, fmt.Sprintf("agreement rate %v, the table's is %.1f%%", r, pct(a+d)))
	}
	valid := agreeValid.FindAllStringSubmatch(text, -1)
	if len(valid) != 2 || off(f(valid[0][2]), pct(a+b), 0.051) || off(f(valid[1][2]), pct(a+cc), 0.051) {
		out = append(out, fmt.Sprintf("validity rates %v, the table's are %.1f%% and %.1f%%", valid, pct(a+b), pct(a+cc)))
	}
	po, pe := float64(a+d)/float64(items), (float64(a+b)*float64(a+cc)+float64(cc+d)*float64(b+d))/float64(items*items)
	if k := agreeKappa.FindStringSubmatch(text); k == nil || off(f(k[1]), (po-pe)/(1-pe), 0.0051) {
		out = append(out, fmt.Sprintf("Cohen's kappa %v, the table's is %.2f", k, (po-pe)/(1-pe)))
	}
	var members string
	if m := agreeMembers.FindStringSubmatch(text); m != nil {
		members = m[1]
	}
	for _, m := range agreeMember.FindAllStringSubmatch(members, -1) {
		if judged > 0 && n(m[2])+n(m[3]) != judged+failed {
			out = append(out, fmt.Sprintf("judge %s answered %s and failed %s of %d items", m[1], m[2], m[3], judged+failed))
		}
	}
	return out
}

// TestAgreementDisagreementsAreFound: the check refuses a report whose
// table, rates, kappa, types or panel members contradict each other, and
// passes the golden reports as they are.
func TestAgreementDisagreementsAreFound(t *testing.T) {
	t.Parallel()
	good := `  sample: seed 3, 100 records drawn for the order check, their 640 judged items
  640 judged, 0 failed
  items compared                             640
  validity agreement rate                  93.0%
  validity Cohen's kappa   0.85 (almost perfect)
  stored judge: valid                      67.5%
  panel: valid                             63.0%
  stored judge: valid             395              37
  stored judge: invalid             8             200
  SUGGEST    395      93.9%   0.87
  PITFALL    245      94.7%   0.87
  judge   model   answered  failed  vs stored  kappa  vs panel  kappa     cost
  biased  biased       640       0      88.1%   0.70     83.6%   0.61  $0.0000
  steady  steady       640       0      91.1%   0.80     98.1%   0.96  $0.0000
  biased at http://simulated.invalid/v1, judge_batch template 3c7c12c99cd8d5b4
  type     items  flipped
  SUGGEST    395       44
`
	if got := agreementDisagreements(good); len(got) != 0 {
		t.Fatalf("a report that agrees is refused: %q", got)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"640 judged, 0", "630 judged, 0", "is not the 640 items drawn"},
		{"compared                             640", "compared                             641", "not the 641 compared"},
		{"rate                  93.0%", "rate                  92.0%", "agreement rate"},
		{"0.85 (almost", "0.75 (almost", "Cohen's kappa"},
		{"panel: valid                             63.0%", "panel: valid                             67.5%", "validity rates"},
		{"PITFALL    245", "PITFALL    240", "the types hold 635 items"},
		{"640       0      88.1%", "600       0      88.1%", "judge biased answered 600"},
	} {
		bad := strings.Replace(good, tc.old, tc.new, 1)
		if got := strings.Join(agreementDisagreements(bad), "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("%q -> %q: disagreements %q, want one saying %q", tc.old, tc.new, got, tc.want)
		}
	}
}
