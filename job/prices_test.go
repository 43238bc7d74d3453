package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCachedPromptPrice: a job file prices a model's cached prompt tokens
// (prices: MODEL: {cached_prompt_per_mtok: ...}); a negative price is
// refused by name.
func TestCachedPromptPrice(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "job.yaml")
	text := "input: {paths: [in.jsonl]}\nout: run\nrollout: {base_url: 'http://127.0.0.1:1/v1', model: m}\n" +
		"prices:\n  m: {prompt_per_mtok: 2, cached_prompt_per_mtok: 0.5, completion_per_mtok: 8}\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := LoadJobFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := j.Prices["m"]; p.CachedPrompt != 0.5 || p.Prompt != 2 || p.Completion != 8 {
		t.Fatalf("prices %+v", j.Prices)
	}
	j.Normalize()
	j.Prices["m"] = Price{Prompt: 2, CachedPrompt: -1, Completion: 8}
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "prices.m.cached_prompt_per_mtok") {
		t.Errorf("a negative cached price: %v", err)
	}
}
