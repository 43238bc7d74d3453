package schema

import (
	"math"
	"testing"
)

func srarRubric() []Item {
	return []Item{
		item(1, TypeSuggest, "a"),
		item(2, TypePitfall, "b"),
		item(3, TypeBonus, "c"),
		item(4, TypeAnswer, "d"),
	}
}

func fpRubric() []Item {
	return []Item{fp(1, TypeFactual, "a", 5), fp(2, TypeProcess, "b", 3), fp(3, TypeProcess, "c", 1)}
}

func ptr[T any](v T) *T { return &v }

func TestCheckRubric(t *testing.T) {
	tests := []struct {
		name   string
		style  string
		max    int
		mutate func([]Item) []Item
		src    func() []Item
		want   *ParseError // nil: no error
	}{
		{name: "srar ok", style: StyleSRaR, src: srarRubric},
		{name: "srar at limit", style: StyleSRaR, max: 4, src: srarRubric},
		{name: "srar no limit", style: StyleSRaR, max: 0, src: srarRubric},
		{name: "fp ok", style: StyleFactualProcess, src: fpRubric},
		{name: "fp ignores maxItems", style: StyleFactualProcess, max: 1, src: fpRubric},
		{name: "judged fields in range", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item {
			it[0].Valid, it[0].ValidReason, it[0].SatRate, it[0].Corr, it[0].EmpiricalValid = ptr(true), ptr("ok"), ptr(1.0), ptr(-1.0), ptr(false)
			return it
		}},
		{name: "unknown style", style: "grounded", src: srarRubric, want: &ParseError{Field: "style", Msg: "unknown rubric style"}},
		{name: "empty", style: StyleSRaR, src: func() []Item { return nil }, want: &ParseError{Msg: "no items"}},
		{name: "ids from 0", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item {
			for i := range it {
				it[i].ID--
			}
			return it
		}, want: &ParseError{Item: 1, Field: "id", Msg: "is 0"}},
		{name: "id gap", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[2].ID = 4; it[3].ID = 5; return it },
			want: &ParseError{Item: 3, Field: "id", Msg: "is 4"}},
		{name: "fp type in srar", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[2].Type = TypeFactual; return it },
			want: &ParseError{Item: 3, Field: "type", Msg: `"FACTUAL" is not a srar item type`}},
		{name: "srar type in fp", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item { it[1].Type = TypeSuggest; return it },
			want: &ParseError{Item: 2, Field: "type"}},
		{name: "lower-case type", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[0].Type = "suggest"; return it },
			want: &ParseError{Item: 1, Field: "type"}},
		{name: "blank text", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[1].Text = " \t\n"; return it },
			want: &ParseError{Item: 2, Field: "text", Msg: "blank"}},
		{name: "invalid utf-8", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item { it[0].Text = "a\xffb"; return it },
			want: &ParseError{Item: 1, Field: "text", Msg: "UTF-8"}},
		{name: "line break in srar", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[0].Text = "a\nb"; return it },
			want: &ParseError{Item: 1, Field: "text", Msg: "line break"}},
		{name: "line break in fp is fine", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item { it[0].Text = "a\nb"; return it }},
		{name: "pitfall polarity", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[1].Polarity = 1; return it },
			want: &ParseError{Item: 2, Field: "polarity", Msg: "PITFALL item has polarity -1"}},
		{name: "zero polarity", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item { it[2].Polarity = 0; return it },
			want: &ParseError{Item: 3, Field: "polarity"}},
		{name: "srar weight zero", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[0].Weight = 0; return it },
			want: &ParseError{Item: 1, Field: "weight", Msg: "positive"}},
		{name: "srar weight NaN", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[0].Weight = math.NaN(); return it },
			want: &ParseError{Item: 1, Field: "weight"}},
		{name: "fp weight fraction", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item { it[1].Weight = 2.5; return it },
			want: &ParseError{Item: 2, Field: "weight", Msg: "integer from 1 to 5"}},
		{name: "fp weight six", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item { it[1].Weight = 6; return it },
			want: &ParseError{Item: 2, Field: "weight"}},
		{name: "sat_rate above 1", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[3].SatRate = ptr(1.5); return it },
			want: &ParseError{Item: 4, Field: "sat_rate"}},
		{name: "corr NaN", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { it[3].Corr = ptr(math.NaN()); return it },
			want: &ParseError{Item: 4, Field: "corr"}},
		{name: "no suggest", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { return renumber(it[1:]) },
			want: &ParseError{Msg: "no SUGGEST"}},
		{name: "no answer", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { return it[:3] },
			want: &ParseError{Msg: "0 ANSWER items"}},
		{name: "two answers", style: StyleSRaR, src: srarRubric, mutate: func(it []Item) []Item { return renumber(append(it, item(0, TypeAnswer, "e"))) },
			want: &ParseError{Msg: "2 ANSWER items"}},
		{name: "over the limit", style: StyleSRaR, max: 3, src: srarRubric, want: &ParseError{Msg: "4 items; at most 3"}},
		{name: "fp too few", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item { return it[:2] },
			want: &ParseError{Msg: "2 items; between 3 and 10"}},
		{name: "fp too many", style: StyleFactualProcess, src: fpRubric, mutate: func(it []Item) []Item {
			for len(it) < 11 {
				it = append(it, fp(0, TypeProcess, "x", 1))
			}
			return renumber(it)
		}, want: &ParseError{Msg: "11 items"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := tt.src()
			if tt.mutate != nil {
				items = tt.mutate(items)
			}
			err := CheckRubric(tt.style, items, tt.max)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckRubric: %v", err)
				}
				return
			}
			assertParseError(t, err, *tt.want)
		})
	}
}

func renumber(items []Item) []Item {
	for i := range items {
		items[i].ID = int32(i + 1)
	}
	return items
}
