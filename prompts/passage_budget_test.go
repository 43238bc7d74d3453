package prompts

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFitPassage(t *testing.T) {
	prose := strings.Repeat("A write-ahead log is replayed after a crash. ", 500) // 22,500 bytes
	paras := strings.Repeat(strings.Repeat("word ", 100)+"\n\n", 60)              // 30,120 bytes
	cjk := strings.Repeat("日志先写入磁盘，然后才修改数据页。", 600)                               // 3 bytes a character
	mixed := strings.Repeat("é", 5000) + strings.Repeat("🙂", 5000)                // 2- and 4-byte sequences
	for _, tc := range []struct {
		name    string
		passage string
		budget  int
		cut     bool
		endWith string // what the kept text ends with, before the note
	}{
		{"fits", "short passage", 256, false, ""},
		{"exactly the budget", strings.Repeat("x", 3*300), 300, false, ""},
		{"one byte over", strings.Repeat("x", 3*300+1), 300, true, ""},
		{"no budget", prose, 0, false, ""},
		{"prose is cut after a word", prose, 1000, true, "is"},
		{"paragraphs are cut at a break", paras, 2000, true, "word"},
		{"CJK text", cjk, 500, true, ""},
		{"two- and four-byte characters", mixed, 700, true, ""},
		{"one long word", strings.Repeat("x", 20000), 256, true, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := FitPassage(tc.passage, tc.budget)
			if cut != tc.cut {
				t.Fatalf("cut = %v, want %v", cut, tc.cut)
			}
			if !cut {
				if got != tc.passage {
					t.Fatal("a passage within the budget was changed")
				}
				return
			}
			checkCut(t, tc.passage, got, tc.budget)
			head, _, _ := strings.Cut(got, "\n[... the passage is cut here")
			if !strings.HasSuffix(head, tc.endWith) {
				t.Errorf("kept text ends with %q, want it to end with %q", head[max(0, len(head)-20):], tc.endWith)
			}
		})
	}
}

// checkCut asserts what a judge relies on of a cut passage: valid UTF-8,
// within the budget, a prefix of the passage (never a character split)
// followed by a note that says how much is shown.
func checkCut(t *testing.T, passage, got string, budget int) {
	t.Helper()
	if !utf8.ValidString(got) {
		t.Fatal("the cut passage is not valid UTF-8: a character was split")
	}
	if n := EstimateTokens(got); n > budget {
		t.Fatalf("the cut passage is %d estimated tokens, over the budget of %d", n, budget)
	}
	head, note, ok := strings.Cut(got, "\n[... the passage is cut here")
	if !ok {
		t.Fatalf("no note says the passage was cut: %q", got[max(0, len(got)-200):])
	}
	if !strings.HasPrefix(passage, head) {
		t.Fatal("the kept text is not the passage's beginning")
	}
	if room := budget*bytesPerToken - len(note) - len("\n[... the passage is cut here"); len(head) < room*3/4-utf8.UTFMax {
		t.Fatalf("kept only %d bytes of the passage where %d fit", len(head), room)
	}
	if want := utf8.RuneCountInString(head); !strings.Contains(note, " "+strconv.Itoa(want)+" of its "+strconv.Itoa(utf8.RuneCountInString(passage))+" characters") {
		t.Errorf("note %q does not say %d of %d characters", note, want, utf8.RuneCountInString(passage))
	}
}

func FuzzFitPassage(f *testing.F) {
	f.Add("A write-ahead log. 日志先写入磁盘 🙂 é\n\nmore", 256)
	f.Add(strings.Repeat("日", 2000), 300)
	f.Add(strings.Repeat("ab\n", 4000), 1000)
	f.Fuzz(func(t *testing.T, passage string, budget int) {
		if !utf8.ValidString(passage) {
			return
		}
		budget = MinJudgePassageTokens + abs(budget)%4096
		got, cut := FitPassage(passage, budget)
		if !cut {
			if got != passage || EstimateTokens(passage) > budget {
				t.Fatalf("uncut passage changed or over budget (%d > %d)", EstimateTokens(passage), budget)
			}
			return
		}
		checkCut(t, passage, got, budget)
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}
