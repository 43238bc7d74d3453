package verify

import (
	"fmt"
	"os"
	"testing"
)

func TestDumpTmp(t *testing.T) {
	if os.Getenv("DUMP") == "" {
		return
	}
	for _, c := range loadEqualCases(t) {
		r := Compare(c.gold, c.pred)
		g := c.gold
		p := c.pred
		if len(p) > 50 {
			p = p[:50] + "…"
		}
		fmt.Printf("%v %-9s %-40q %-45q | %q %q %s\n", b2i(c.want), r.Method, g, p, r.Gold, r.Pred, r.Reason)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
