package main

import (
	"strings"
	"testing"
)

// FuzzPriceFlag: --price never panics; what it accepts is a model with two
// prices that are not negative, and it prints back in a form it accepts.
func FuzzPriceFlag(f *testing.F) {
	for _, s := range []string{"gpt-4.1-mini=0.40,1.60", "m=0,0", "=1,2", "m=1", "m=-1,2", "m=1,2,3", "a=b=1,2", "m=NaN,1", "m=1e308,1e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p := priceFlags{}
		if err := p.Set(v); err != nil {
			return
		}
		model, _, _ := strings.Cut(v, "=")
		got, ok := p[model]
		if !ok || model == "" || !(got.PromptPerMTok >= 0) || !(got.CompletionPerMTok >= 0) {
			t.Fatalf("%q accepted as %v", v, p)
		}
		again := priceFlags{}
		if err := again.Set(p.String()); err != nil || again[model] != got {
			t.Fatalf("%q prints as %q, which reads back as %v (%v)", v, p.String(), again, err)
		}
	})
}
