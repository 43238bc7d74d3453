package verify

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestPolicyExamples checks every row of the example table of the answer
// equivalence policy (docs/verification-policy.md) against Equal, so the
// document cannot drift from the code.
func TestPolicyExamples(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../docs/verification-policy.md")
	if err != nil {
		t.Fatalf("open policy: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inTable := false
	rows := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "| gold | prediction | equal |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "| ---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("policy row %q: want 4 cells, got %d", line, len(cells))
		}
		// A pipe inside a cell is written \| so that the table stays a table.
		gold := strings.ReplaceAll(strings.Trim(strings.TrimSpace(cells[0]), "`"), `\|`, "|")
		pred := strings.ReplaceAll(strings.Trim(strings.TrimSpace(cells[1]), "`"), `\|`, "|")
		want := strings.TrimSpace(cells[2]) == "yes"
		if got := Equal(gold, pred); got != want {
			t.Errorf("docs/verification-policy.md row: Equal(%q, %q) = %v, table says %v", gold, pred, got, want)
		}
		rows++
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read policy: %v", err)
	}
	if rows < 100 {
		t.Errorf("found only %d example rows in docs/verification-policy.md", rows)
	}
}
