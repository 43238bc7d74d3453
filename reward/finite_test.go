package reward

import (
	"strings"
	"testing"
)

// TestParamsCheckBoundsBudgets: budgets so large that the SRaR range
// (1 + R_SUG + R_BON) overflows are refused at start, named.
func TestParamsCheckBoundsBudgets(t *testing.T) {
	p := DefaultParams()
	p.RSug, p.RPit, p.RBon = 1e308, -1e308, 1e308
	err := p.Check()
	for _, name := range []string{"r_sug", "r_pit", "r_bon"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Check does not name %s: %v", name, err)
		}
	}
	p = DefaultParams()
	p.RSug, p.RPit, p.RBon = MaxBudget, -MaxBudget, MaxBudget
	if err := p.Check(); err != nil {
		t.Errorf("budgets at the bound: %v", err)
	}
}
