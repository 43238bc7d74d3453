package prompts

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// oddText holds what a prompt input may: markup, quotes, newlines, tabs,
// non-ASCII, template and section syntax.
const oddText = "a <b> & \"c\" 'd' `e`\nline two\t\u00e9 \u00fc \u6f22\u5b57 \U0001F642 {{.Problem}} %v\n=== user ===\n"

// textTemplateOnly is s with every compiled program dropped: each section
// renders through text/template, the reference.
func textTemplateOnly(s *Set) *Set {
	for _, secs := range s.templates {
		for i := range secs {
			secs[i].prog = nil
		}
	}
	return s
}

// checkBothPaths renders through the compiled programs and through
// text/template and wants the same messages (or the same error), with no
// compiled render handed to text/template when fast is set.
func checkBothPaths(t *testing.T, fast, ref *Set, render func(*Set) ([]Message, error), wantFast bool) {
	t.Helper()
	before := fast.fallbacks.Load()
	got, gotErr := render(fast)
	want, wantErr := render(ref)
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("error: compiled %v, text/template %v", gotErr, wantErr)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("messages differ:\ncompiled:      %q\ntext/template: %q", got, want)
	}
	if fell := fast.fallbacks.Load() - before; wantFast && fell != 0 {
		t.Errorf("%d section(s) fell back to text/template", fell)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestEveryBuiltinSectionCompiles: a template edit that moves a section off
// the compiled path is seen here.
func TestEveryBuiltinSectionCompiles(t *testing.T) {
	s := mustLoad(t, "")
	for _, name := range Names {
		for i, sec := range s.templates[name] {
			if sec.fixed == nil && sec.prog == nil {
				t.Errorf("%s section %d (%s) has actions but no compiled program", name, i, sec.role)
			}
		}
	}
}

// weights a criterion or item may carry, printed by {{.Weight}} as fmt does.
var oddWeights = []float64{3, 1.5, -2.5, 0.1, -0, 1e21, 1e-7, 123456789.125, math.NaN(), math.Inf(1), math.Inf(-1)}

func oddCriteria(n int) []schema.Criterion {
	valid := true
	out := make([]schema.Criterion, n)
	for i := range out {
		out[i] = schema.Criterion{
			ID: "c" + strconv.Itoa(i+1), Weight: oddWeights[i%len(oddWeights)], Name: oddText, Description: oddText,
			RequiredElements: []string{oddText, "", "x"}, ScoringGuide: oddText, VerificationMethod: oddText,
			ExpectedKeywords: []string{"k"}, ExpectedConcepts: nil,
		}
		if i%2 == 0 {
			out[i].Valid = &valid
		}
	}
	return out
}

func oddItems() []schema.Item {
	return []schema.Item{
		{ID: -7, Type: oddText, Text: oddText, Weight: -1.25, Polarity: -1},
		{ID: 1 << 30, Type: "", Text: "", Weight: 0.1},
	}
}

// TestCompiledMatchesTextTemplate renders every template through both paths
// with the data the stages pass, from the fixed inputs to empty lists, odd
// text, odd weights and many criteria.
func TestCompiledMatchesTextTemplate(t *testing.T) {
	fast, ref := mustLoad(t, ""), textTemplateOnly(mustLoad(t, ""))
	oddSolutions := []Solution{{Index: -1, Correct: true, Text: oddText}, {Index: 0, Text: ""}}
	oddAnalysis := schema.Analysis{Genre: oddText, Contribution: "", Concepts: []string{oddText, ""}, Depth: oddText}
	type tc struct {
		name   string
		render func(*Set) ([]Message, error)
	}
	var cases []tc
	for _, name := range Names {
		cases = append(cases, tc{"fixed/" + name, func(s *Set) ([]Message, error) { return renderFixed(s, name) }})
	}
	cases = append(cases,
		tc{"rollout/odd", func(s *Set) ([]Message, error) { return s.RolloutMessages(oddText) }},
		tc{"srar/none", func(s *Set) ([]Message, error) { return s.DistillSRaRMessages("", "", nil, 0) }},
		tc{"srar/odd", func(s *Set) ([]Message, error) { return s.DistillSRaRMessages(oddText, oddText, oddSolutions, -3) }},
		tc{"factual/odd", func(s *Set) ([]Message, error) { return s.DistillFactualProcessMessages(oddText, oddText, oddText) }},
		tc{"decompose/odd", func(s *Set) ([]Message, error) {
			return s.DecomposeMessages(oddText, oddText, oddItems()[0], oddSolutions)
		}},
		tc{"decompose/none", func(s *Set) ([]Message, error) { return s.DecomposeMessages("", "", schema.Item{}, nil) }},
		tc{"judge_item/odd", func(s *Set) ([]Message, error) { return s.JudgeItemMessages(oddText, oddText, oddItems()[0]) }},
		tc{"judge_batch/odd", func(s *Set) ([]Message, error) { return s.JudgeBatchMessages(oddText, oddText, oddItems()) }},
		tc{"judge_batch/none", func(s *Set) ([]Message, error) { return s.JudgeBatchMessages("", "", nil) }},
		tc{"satisfy/odd", func(s *Set) ([]Message, error) { return s.SatisfyMessages(oddText, oddText, oddText, oddItems()) }},
		tc{"satisfy/none", func(s *Set) ([]Message, error) { return s.SatisfyMessages("", "", "", nil) }},
		tc{"repair/odd", func(s *Set) ([]Message, error) { return s.RepairMessages(nil, oddText, errors.New(oddText)) }},
		tc{"score_grounded/many", func(s *Set) ([]Message, error) {
			return s.ScoreGroundedMessages(oddText, oddText, oddText, oddCriteria(40))
		}},
		tc{"score_grounded/none", func(s *Set) ([]Message, error) { return s.ScoreGroundedMessages("", "", "", nil) }},
		tc{"analyze/zero", func(s *Set) ([]Message, error) { return s.GroundedAnalyzeMessages(DocumentView{}) }},
		tc{"analyze/odd", func(s *Set) ([]Message, error) {
			return s.GroundedAnalyzeMessages(DocumentView{Title: oddText, Head: oddText, Cut: true, Chars: -1, Outline: oddText})
		}},
		tc{"enrich/many", func(s *Set) ([]Message, error) {
			return s.GroundedEnrichMessages(oddText, oddText, oddAnalysis, oddCriteria(200))
		}},
		tc{"enrich/none", func(s *Set) ([]Message, error) {
			return s.GroundedEnrichMessages("", "", schema.Analysis{}, nil)
		}},
		tc{"enrich/zero_criterion", func(s *Set) ([]Message, error) {
			return s.GroundedEnrichMessages("", "", schema.Analysis{}, make([]schema.Criterion, 2))
		}},
		tc{"judge_batch_grounded/many", func(s *Set) ([]Message, error) {
			return s.GroundedJudgeBatchMessages(oddText, oddText, oddCriteria(300))
		}},
		tc{"judge_batch_grounded/none", func(s *Set) ([]Message, error) { return s.GroundedJudgeBatchMessages("", "", nil) }},
		tc{"judge_item_grounded/zero", func(s *Set) ([]Message, error) {
			return s.GroundedJudgeItemMessages("", "", schema.Criterion{})
		}},
		tc{"judge_item_grounded/odd", func(s *Set) ([]Message, error) {
			return s.GroundedJudgeItemMessages(oddText, oddText, oddCriteria(3)[2])
		}},
		tc{"answer/odd", func(s *Set) ([]Message, error) { return s.GroundedAnswerMessages(oddText) }},
		tc{"answer_open/odd", func(s *Set) ([]Message, error) { return s.GroundedAnswerOpenMessages(oddText, oddText) }},
	)
	for _, k := range []int{-1, 0, 1, 2, 7} {
		cases = append(cases, tc{"synthesize/k=" + strconv.Itoa(k), func(s *Set) ([]Message, error) {
			pos := PassagePosition{Number: k, Count: k * 3}
			if k%2 == 0 {
				pos.Section = oddText
			}
			return s.GroundedSynthesizeMessages(oddText, oddText, oddAnalysis, pos, RubricBounds{K: k, MinCriteria: k, MaxCriteria: -k, MinTotalWeight: 0.1 * float64(k)})
		}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkBothPaths(t, fast, ref, c.render, true) })
	}
}

// FuzzCompiledMatchesTextTemplate renders a few templates with random
// text, weights and counts through both paths.
func FuzzCompiledMatchesTextTemplate(f *testing.F) {
	fast, err := Load("")
	if err != nil {
		f.Fatal(err)
	}
	ref, err := Load("")
	if err != nil {
		f.Fatal(err)
	}
	textTemplateOnly(ref)
	f.Add(oddText, 1.5, 2, uint8(3))
	f.Add("", math.Copysign(0, -1), 0, uint8(0))
	f.Add("x", 1e300, -1, uint8(40))
	f.Fuzz(func(t *testing.T, text string, weight float64, k int, n uint8) {
		criteria := make([]schema.Criterion, n)
		for i := range criteria {
			criteria[i] = schema.Criterion{ID: text, Weight: weight * float64(i), Name: text, Description: text,
				RequiredElements: strings.Split(text, "\n"), ExpectedKeywords: []string{text}}
		}
		a := schema.Analysis{Genre: text, Concepts: strings.Fields(text)}
		sols := []Solution{{Index: k, Correct: k%2 == 0, Text: text}}
		renders := []func(*Set) ([]Message, error){
			func(s *Set) ([]Message, error) { return s.GroundedEnrichMessages(text, text, a, criteria) },
			func(s *Set) ([]Message, error) { return s.GroundedJudgeBatchMessages(text, text, criteria) },
			func(s *Set) ([]Message, error) {
				return s.GroundedSynthesizeMessages(text, text, a, PassagePosition{Number: k, Section: text}, RubricBounds{K: k, MinTotalWeight: weight})
			},
			func(s *Set) ([]Message, error) { return s.DistillSRaRMessages(text, text, sols, k) },
			func(s *Set) ([]Message, error) {
				return s.JudgeBatchMessages(text, text, []schema.Item{{ID: int32(k), Type: text, Text: text, Weight: weight}})
			},
		}
		for _, render := range renders {
			checkBothPaths(t, fast, ref, render, true)
		}
	})
}

// Types with what text/template treats apart: a String method, a method
// named like a promoted field, a promoted field.
type (
	stringerName string
	ptrStringer  struct{ N int }
	Promoted     struct{ Name string }
	shadowed     struct{ Promoted }
	plainName    string
)

func (s stringerName) String() string { return "S:" + string(s) }
func (p *ptrStringer) String() string { return "P" + strconv.Itoa(p.N) }
func (shadowed) Name() string         { return "method" }

// TestSectionPaths executes single sections through both paths: the
// output (or error) is text/template's, and the compiled program does the
// render (fast) only for what it reproduces.
func TestSectionPaths(t *testing.T) {
	one := 1
	type flat struct {
		S     string
		P     *struct{ X int }
		IP    *int
		I     any
		St    stringerName
		L     []string
		Arr   [2]string
		PS    []ptrStringer
		M     map[string]int
		F     func() string
		N     int
		N32   int32
		U8    uint8
		UP    uintptr
		F32   float32
		F64   float64
		B     bool
		C     complex128
		A     []any
		Name  plainName
		Sep   string
		PL    *[]int
		hid   int
		Embed Promoted
	}
	data := flat{S: "b", P: &struct{ X int }{4}, IP: &one, I: "iface", St: "x", L: []string{"p", "q"}, Arr: [2]string{"a", "b"},
		PS: []ptrStringer{{1}, {2}}, M: map[string]int{"k": 1}, N: 3, N32: 1, U8: 200, UP: 9, F32: 0.1, F64: math.Inf(-1),
		B: true, C: 1i, A: []any{"x"}, Name: "plain", Sep: ", ", hid: 1, Embed: Promoted{"e"}}
	cases := []struct {
		name, text string
		data       any
		fast       bool
	}{
		{"fields", "{{.S}} {{.P.X}} {{.N}} {{.N32}} {{.U8}} {{.F32}} {{.F64}} {{.B}} {{.Name}} {{.Embed.Name}}", data, true},
		{"dot", "[{{.}}]", "x", true},
		{"pointer data", "{{.S}}", &data, true},
		{"root variable", "{{range .L}}{{.}}{{$.S}}{{end}}", data, true},
		{"range two vars", "{{range $i, $c := .L}}{{inc $i}}={{$c}};{{end}}", data, true},
		{"range one var", "{{range $c := .Arr}}{{$c}}{{end}}", data, true},
		{"range else var", "{{range $c := .L}}x{{else}}{{len $c}}{{end}}", flat{}, true},
		{"range else", "{{range .L}}x{{else}}empty{{end}}", flat{}, true},
		{"if else", "{{if .B}}y{{else}}n{{end}}{{if .S}}s{{end}}{{if .P}}p{{end}}{{if .M}}m{{end}}{{if .I}}i{{end}}", flat{}, true},
		{"else if", "{{if eq .N 1}}one{{else if gt .N 2}}many{{else}}two{{end}}", data, true},
		{"eq strings", "{{if eq .S \"b\"}}b{{end}}{{if gt .S \"a\"}}>a{{end}}{{eq .N32 1}}", data, true},
		{"gt equal", "{{if gt .S \"b\"}}>{{else}}<={{end}}{{if gt .N 3}}>{{else}}<={{end}}{{gt .N -4}}", data, true},
		{"truthy", "{{if .B}}b{{end}}{{if .S}}s{{end}}{{if .P}}p{{end}}{{if .M}}m{{end}}{{if .I}}i{{end}}{{if .L}}l{{end}}{{if .Embed}}e{{end}}{{if .F64}}f{{end}}{{if .U8}}u{{end}}", data, true},
		{"len", "{{len .L}} {{len .M}} {{len .S}} {{len .Arr}}", data, true},
		{"join", "{{join .L .Sep}}|{{join .L \"\"}}", data, true},
		{"comment", "a{{/* note */}}{{.S}}", data, true},
		{"map data", "{{.k}}", map[string]int{"k": 2}, false},
		{"missing map key", "{{.nope}}", map[string]int{"k": 2}, false},
		{"range over map", "{{range $k, $v := .M}}{{$k}}={{$v}}{{end}}", data, false},
		{"nil pointer", "{{.P.X}}", flat{}, false},
		{"pointer printed", "{{.IP}}", data, false},
		{"interface printed", "{{.I}}", data, false},
		{"nil interface printed", "{{.I}}", flat{}, false},
		{"stringer", "{{.St}}", data, false},
		{"pointer stringer element", "{{range .PS}}{{.}}{{end}}", data, false},
		{"method named like the field", "{{.Name}}", shadowed{Promoted{"field"}}, false},
		{"promoted field", "{{.Name}}", shadowed{}, false},
		{"unexported field", "{{.hid}}", data, false},
		{"func field", "{{.F}}", data, false},
		{"missing field", "{{.Nope}}", data, false},
		{"nil data", "{{.S}}", nil, false},
		{"uintptr", "{{.UP}}", data, false},
		{"complex if", "{{if .C}}c{{end}}", data, false},
		{"eq int and string", "{{if eq .N \"3\"}}x{{end}}", data, false},
		{"eq three args", "{{if eq .N 1 3}}x{{end}}", data, false},
		{"inc int32", "{{inc .N32}}", data, false},
		{"join any", "{{join .A \", \"}}", data, false},
		{"len nil pointer", "{{len .PL}}", data, false},
		{"range over int", "{{range .N}}{{.}}{{end}}", data, false},
		{"break", "{{range .L}}{{.}}{{break}}{{end}}", data, false},
		{"printf", "{{printf \"%q\" .S}}", data, false},
		{"with", "{{with .S}}{{.}}{{end}}", data, false},
		{"pipeline", "{{.S | printf \"%s!\"}}", data, false},
		{"variable declared", "{{$x := .S}}{{$x}}", data, false},
		{"float constant", "{{if eq .F64 1.5}}x{{end}}", data, false},
		{"template call", "{{define \"x\"}}in{{end}}{{template \"x\"}}", data, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sec, err := newSection("t", "user", c.text)
			if err != nil {
				t.Fatal(err)
			}
			var got, want bytes.Buffer
			slow, gotErr := sec.execute(&got, c.data)
			wantErr := sec.body.Execute(&want, c.data)
			if errText(gotErr) != errText(wantErr) || (wantErr == nil && got.String() != want.String()) {
				t.Fatalf("got %q (%v), text/template %q (%v)", got.String(), gotErr, want.String(), wantErr)
			}
			if slow == c.fast {
				t.Errorf("compiled path taken: %v, want %v (compiled: %v)", !slow, c.fast, sec.prog != nil)
			}
		})
	}
}

// TestFieldCacheFollowsTheType: a field name evaluated on one struct type,
// then another with the field elsewhere, then the first, is read right
// each time.
func TestFieldCacheFollowsTheType(t *testing.T) {
	sec, err := newSection("t", "user", "{{.A}}")
	if err != nil {
		t.Fatal(err)
	}
	type first struct{ A string }
	type second struct {
		B int
		A string
	}
	for _, data := range []any{first{"1"}, second{7, "2"}, first{"3"}, &second{8, "4"}} {
		var b bytes.Buffer
		if slow, err := sec.execute(&b, data); err != nil || slow {
			t.Fatalf("%#v: slow %v, err %v", data, slow, err)
		}
		var want bytes.Buffer
		if err := sec.body.Execute(&want, data); err != nil || b.String() != want.String() {
			t.Errorf("%#v: got %q, want %q (%v)", data, b.String(), want.String(), err)
		}
	}
}

// TestOverridesOutsideTheSubset: an override using what the compiler does
// not take renders through text/template, and a field the data lacks
// gives text/template's error.
func TestOverridesOutsideTheSubset(t *testing.T) {
	cases := []struct {
		name, text string
		compiled   bool
	}{
		{"printf", `{{printf "%q" .Problem}}`, false},
		{"with", `{{with .Item}}{{.Text}} {{.Weight}}{{end}}`, false},
		{"pipeline", `{{.Item.Weight | printf "%.2f"}}`, false},
		{"variable", `{{$p := .Problem}}{{$p}}`, false},
		{"template", `{{define "x"}}[{{.}}]{{end}}{{template "x" .Answer}}`, false},
		{"nil pointer field", `{{.Item.Valid}}`, true},
		{"missing field", `{{.Item.NoSuchField}}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, JudgeItem+".tmpl", "=== user ===\n"+c.text+"\n")
			fast, ref := mustLoad(t, dir), textTemplateOnly(mustLoad(t, dir))
			if got := fast.templates[JudgeItem][0].prog != nil; got != c.compiled {
				t.Errorf("compiled = %v, want %v", got, c.compiled)
			}
			render := func(s *Set) ([]Message, error) { return s.JudgeItemMessages(oddText, "42", oddItems()[0]) }
			checkBothPaths(t, fast, ref, render, false)
			if _, err := render(fast); c.name == "missing field" && (err == nil || !strings.Contains(err.Error(), "NoSuchField")) {
				t.Errorf("missing field: error %v does not name the field", err)
			}
		})
	}
}
