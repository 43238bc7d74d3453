package llm

import (
	"math"
	"regexp"
	"slices"
	"testing"
)

func TestCacheKey(t *testing.T) {
	base := func() Request {
		return Request{
			Stage:       "rollout",
			Model:       "m",
			Messages:    []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "q"}},
			Temperature: ptr(0.7),
			TopP:        ptr(0.9),
			MaxTokens:   100,
			N:           2,
			Seed:        ptr[int64](1),
			SampleIndex: 3,
		}
	}
	k0 := CacheKey(base())
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(k0) {
		t.Fatalf("key %q is not 16 hex digits", k0)
	}
	if CacheKey(base()) != k0 {
		t.Fatal("key is not deterministic")
	}

	changes := map[string]func(*Request){
		"model":                 func(r *Request) { r.Model = "m2" },
		"role":                  func(r *Request) { r.Messages[0].Role = "user" },
		"content":               func(r *Request) { r.Messages[1].Content = "q2" },
		"boundary between msgs": func(r *Request) { r.Messages[0].Content = "sq"; r.Messages[1].Content = "" },
		"role/content boundary": func(r *Request) { r.Messages[1].Role = "userq"; r.Messages[1].Content = "" },
		"extra message":         func(r *Request) { r.Messages = append(r.Messages, Message{Role: "user"}) },
		"temperature":           func(r *Request) { r.Temperature = ptr(0.8) },
		"temperature nil":       func(r *Request) { r.Temperature = nil },
		"temperature 0":         func(r *Request) { r.Temperature = ptr(0.0) },
		"top_p":                 func(r *Request) { r.TopP = ptr(1.0) },
		"top_p nil":             func(r *Request) { r.TopP = nil },
		"max tokens":            func(r *Request) { r.MaxTokens = 101 },
		"n":                     func(r *Request) { r.N = 3 },
		"seed":                  func(r *Request) { r.Seed = ptr[int64](2) },
		"seed nil":              func(r *Request) { r.Seed = nil },
		"seed 0":                func(r *Request) { r.Seed = ptr[int64](0) },
		"sample index":          func(r *Request) { r.SampleIndex = 4 },
		"json":                  func(r *Request) { r.JSON = true },
		"endpoint kind":         func(r *Request) { r.Scope.EndpointKind = "vllm" },
		"template":              func(r *Request) { r.Scope.Template = "0123abcd" },
		"scope boundary":        func(r *Request) { r.Scope = Scope{EndpointKind: "vllm0123abcd"} },
	}
	seen := map[string]string{k0: "base"}
	for name, change := range changes {
		r := base()
		change(&r)
		k := CacheKey(r)
		if prev, dup := seen[k]; dup {
			t.Errorf("%s: key %s same as %s", name, k, prev)
		}
		seen[k] = name
	}

	same := map[string][2]func(*Request){
		"stage":         {func(r *Request) {}, func(r *Request) { r.Stage = "judge" }},
		"n 0 vs 1":      {func(r *Request) { r.N = 1 }, func(r *Request) { r.N = 0 }},
		"negative zero": {func(r *Request) { r.Temperature = ptr(0.0) }, func(r *Request) { r.Temperature = ptr(math.Copysign(0, -1)) }},
		"message copy":  {func(r *Request) {}, func(r *Request) { r.Messages = slices.Clone(r.Messages) }},
	}
	for name, pair := range same {
		a, b := base(), base()
		pair[0](&a)
		pair[1](&b)
		if CacheKey(a) != CacheKey(b) {
			t.Errorf("%s changed the key", name)
		}
	}
}

func BenchmarkCacheKey(b *testing.B) {
	req := Request{Model: "Qwen/Qwen3-8B", Temperature: ptr(1.0), MaxTokens: 4096, N: 1, Seed: ptr[int64](7), SampleIndex: 5,
		Messages: []Message{
			{Role: "system", Content: "You are a careful grader."},
			{Role: "user", Content: string(make([]byte, 8<<10))},
		}}
	b.SetBytes(int64(len(req.Messages[1].Content)))
	b.ReportAllocs()
	for b.Loop() {
		CacheKey(req)
	}
}

// TestCacheKeyPinned: a change to the key encoding orphans every cache, and
// every resume would pay again for work already answered. Change the value
// only together with schema.SpecVersion.
func TestCacheKeyPinned(t *testing.T) {
	temp, seed := 0.7, int64(3)
	req := Request{Stage: "rollout", Model: "m", Messages: []Message{{Role: "user", Content: "What is 2+2?"}},
		Temperature: &temp, Seed: &seed, SampleIndex: 3, MaxTokens: 100}
	if got := CacheKey(req); got != "8bf5c97e9b81e5c8" {
		t.Errorf("CacheKey changed: %s", got)
	}
}

// TestScopedKeyPinned: a judge's key (a request with a Scope) is pinned as
// the others are; a request without one keeps TestCacheKeyPinned's key.
func TestScopedKeyPinned(t *testing.T) {
	temp, seed := 0.7, int64(3)
	req := Request{Stage: "judge", Model: "m", Messages: []Message{{Role: "user", Content: "What is 2+2?"}},
		Temperature: &temp, Seed: &seed, SampleIndex: 3, MaxTokens: 100, Scope: Scope{EndpointKind: "vllm", Template: "0123abcd"}}
	if got := CacheKey(req); got != "924994289e493d28" {
		t.Errorf("scoped CacheKey changed: %s", got)
	}
}

func TestEndpointKind(t *testing.T) {
	cases := []struct{ kind, url, want string }{
		{"", "https://api.openai.com/v1", KindOpenAI},
		{"", "https://API.OpenAI.com:443/v1", KindOpenAI},
		{"", "http://127.0.0.1:8000/v1", KindGeneric},
		{"", "https://api.openai.com.example.net/v1", KindGeneric},
		{"", "", KindGeneric},
		{"vllm", "http://10.0.0.1:8000/v1", "vllm"},
		{"sglang", "https://api.openai.com/v1", "sglang"},
	}
	for _, c := range cases {
		if got := EndpointKind(c.kind, c.url); got != c.want {
			t.Errorf("EndpointKind(%q, %q) = %q, want %q", c.kind, c.url, got, c.want)
		}
	}
	for _, ok := range []string{"", "openai", "vllm", "sglang", "openai-compatible", "llama.cpp", "tgi_2"} {
		if err := CheckEndpointKind(ok); err != nil {
			t.Errorf("CheckEndpointKind(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"vLLM", "1vllm", "-x", "v llm", "vllm/0.6"} {
		if err := CheckEndpointKind(bad); err == nil {
			t.Errorf("CheckEndpointKind(%q) accepted it", bad)
		}
	}
}

func TestParseSeed(t *testing.T) {
	for _, c := range []struct {
		in   string
		want *int64
		bad  bool
	}{
		{"0", ptr[int64](0), false}, {"7", ptr[int64](7), false}, {"-3", ptr[int64](-3), false},
		{"none", nil, false}, {"", nil, true}, {"seven", nil, true}, {"None", nil, true}, {"1.5", nil, true},
	} {
		got, err := ParseSeed(c.in)
		switch {
		case c.bad && err == nil:
			t.Errorf("ParseSeed(%q) accepted it", c.in)
		case !c.bad && err != nil:
			t.Errorf("ParseSeed(%q): %v", c.in, err)
		case !c.bad && (got == nil) != (c.want == nil), got != nil && c.want != nil && *got != *c.want:
			t.Errorf("ParseSeed(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
