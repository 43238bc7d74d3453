package schema

import (
	"strings"
	"testing"
)

func TestParseDecomposed(t *testing.T) {
	tests := []struct {
		name, reply, typ string
		want             []string // texts; nil: an error
		wantErr          string
	}{
		{"two lines", "<<SUGGEST>>: Checks x = 3 in the equation.\n<<SUGGEST>>: Keeps the root x = -2.", "SUGGEST",
			[]string{"Checks x = 3 in the equation.", "Keeps the root x = -2."}, ""},
		{"three, bullets and blanks", "- <<PITFALL>> Divides by x.\n\n2. <<pitfall>>: Drops a sign.\n<<PITFALL>>：Forgets  x = 0.", "PITFALL",
			[]string{"Divides by x.", "Drops a sign.", "Forgets x = 0."}, ""},
		{"one item", "<<SUGGEST>>: Only one.", "SUGGEST", nil, "has 1 items"},
		{"four items", "<<BONUS>>: a\n<<BONUS>>: b\n<<BONUS>>: c\n<<BONUS>>: d", "BONUS", nil, "has 4 items"},
		{"another type", "<<SUGGEST>>: a\n<<PITFALL>>: b", "SUGGEST", nil, "line 2"},
		{"prose", "Here are the items:\n<<SUGGEST>>: a\n<<SUGGEST>>: b", "SUGGEST", nil, "line 1"},
		{"empty text", "<<SUGGEST>>: a\n<<SUGGEST>>:", "SUGGEST", nil, "no text"},
		{"repeat", "<<FACTUAL>>: States 5.\n<<FACTUAL>>: states  5.", "FACTUAL", nil, "repeats item 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items, err := ParseDecomposed(tc.reply, tc.typ)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(tc.want) {
				t.Fatalf("%d items, want %d", len(items), len(tc.want))
			}
			for i, it := range items {
				if it.Text != tc.want[i] || it.ID != int32(i+1) || it.Type != strings.ToUpper(tc.typ) || it.Polarity != PolarityOf(it.Type) || it.Weight != 1 {
					t.Errorf("item %d = %+v, want text %q, id %d, type %s", i, it, tc.want[i], i+1, tc.typ)
				}
			}
		})
	}
}

func FuzzParseDecomposed(f *testing.F) {
	f.Add("<<SUGGEST>>: a\n<<SUGGEST>>: b", "SUGGEST")
	f.Add("- <<PITFALL>> x\n<<PITFALL>>: y\n<<PITFALL>>: z", "PITFALL")
	f.Add("<<>>:\n", "")
	f.Fuzz(func(t *testing.T, reply, typ string) {
		items, err := ParseDecomposed(reply, typ)
		if err != nil {
			return
		}
		if len(items) < MinDecomposedItems || len(items) > MaxDecomposedItems {
			t.Fatalf("%d items accepted", len(items))
		}
		for i, it := range items {
			if it.Text == "" || it.ID != int32(i+1) {
				t.Fatalf("item %d: %+v", i, it)
			}
		}
	})
}
