package schema

import (
	"strings"
	"testing"
)

func TestParseElicited(t *testing.T) {
	items, err := ParseElicited("Two differences:\n```json\n[{\"type\": \"PITFALL\", \"text\": \"Adds  the roots' squares\", \"weight\": 3}, {\"type\": \"PROCESS\", \"text\": \"Checks by substitution\", \"weight\": 2}]\n```")
	if err != nil || len(items) != 2 || items[0].Polarity != -1 || items[0].Text != "Adds the roots' squares" || items[1].Weight != 2 {
		t.Fatalf("parsed %+v, %v", items, err)
	}
	if items, err := ParseElicited("[]"); err != nil || len(items) != 0 {
		t.Errorf("an empty array: %+v, %v; want no criterion", items, err)
	}
	for text, want := range map[string]string{
		`[{"type": "SUGGEST", "text": "x", "weight": 1}]`: "[0].type",
		`[{"type": "PROCESS", "text": " ", "weight": 1}]`: "[0].text",
		`[{"type": "PROCESS", "text": "x", "weight": 9}]`: "[0].weight",
		`No new criteria are needed.`:                     "",
	} {
		if _, err := ParseElicited(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", text, err, want)
		}
	}
}

func FuzzParseElicited(f *testing.F) {
	f.Add(`[{"type": "PITFALL", "text": "x", "weight": 3}]`)
	f.Add("[]")
	f.Fuzz(func(t *testing.T, text string) {
		items, err := ParseElicited(text)
		if err != nil {
			return
		}
		for _, it := range items {
			if (it.Type != TypeProcess && it.Type != TypePitfall) || it.Weight < 1 || it.Weight > 5 || strings.TrimSpace(it.Text) == "" {
				t.Fatalf("parsed %+v", it)
			}
		}
	})
}
