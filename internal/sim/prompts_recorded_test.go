package sim

import (
	"testing"
)

// The prompt recorder measures what a prefix cache could share: each
// request's unshareable characters are its prompt's length minus its
// longest common prefix with any earlier request, whatever the order.
func TestPromptRecorderUnshared(t *testing.T) {
	t.Parallel()
	var r PromptRecorder
	msg := func(s string) []Message { return []Message{{Role: "user", Content: s}} }
	lengths := func(s string) int { return len(serializePrompt(msg(s))) }
	// bruteForce is the definition: the longest common prefix with every
	// earlier prompt, one by one.
	bruteForce := func(p string, earlier []string) int {
		best := 0
		for _, e := range earlier {
			a, b := serializePrompt(msg(p)), serializePrompt(msg(e))
			n := 0
			for n < len(a) && n < len(b) && a[n] == b[n] {
				n++
			}
			best = max(best, n)
		}
		return lengths(p) - best
	}
	prompts := []string{
		"the rubric, then response one", "the rubric, then response two", "another problem", "the rubric, then response one",
		"the rubric", "the rubric, then", "the rubric, then response three", "a", "the", "another problem, again", "b",
	}
	// Spot checks, besides the definition: a prompt asked before has
	// nothing of its own, the beginning of one only its message's end;
	// two responses after one rubric differ by their own text (below).
	spot := map[int]int{3: 0, 4: 1, 5: 1}
	for i, p := range prompts {
		got := r.Record(KindSatisfy, msg(p))
		want := bruteForce(p, prompts[:i])
		if got.Kind != KindSatisfy || got.Repair || got.Prompt != serializePrompt(msg(p)) || got.Chars != lengths(p) || got.Unshared != want {
			t.Errorf("prompt %d %q: %+v, want chars %d unshared %d", i, p, got, lengths(p), want)
		}
		if w, ok := spot[i]; ok && got.Unshared != w {
			t.Errorf("prompt %d %q: unshared %d, want %d", i, p, got.Unshared, w)
		}
		if i == 1 && got.Unshared > len("two")+4 {
			t.Errorf("a second response after one rubric: %d unshared characters, want its own 3 and the message's end", got.Unshared)
		}
	}
	if got := r.Prompts(); len(got) != len(prompts) {
		t.Fatalf("recorded %d prompts, want %d", len(got), len(prompts))
	}
	repair := []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "bad"}, {Role: "user", Content: "again"}}
	if got := r.Record(KindSatisfy, repair); !got.Repair {
		t.Errorf("a repair conversation is recorded as %+v", got)
	}
}
