package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

var (
	promptsOnce sync.Once
	promptSet   *prompts.Set
	promptsErr  error
)

func loadPrompts(t testing.TB) *prompts.Set {
	t.Helper()
	promptsOnce.Do(func() { promptSet, promptsErr = prompts.Load("") })
	if promptsErr != nil {
		t.Fatalf("prompts.Load: %v", promptsErr)
	}
	return promptSet
}

func toMessages(pm []prompts.Message) []Message {
	out := make([]Message, len(pm))
	for i, m := range pm {
		out[i] = Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// request is a chat-completions request body.
type request struct {
	Model          string            `json:"model"`
	Messages       []prompts.Message `json:"messages"`
	N              int               `json:"n,omitempty"`
	Seed           *int64            `json:"seed,omitempty"`
	Temperature    *float64          `json:"temperature,omitempty"`
	MaxTokens      int               `json:"max_completion_tokens,omitempty"`
	ResponseFormat map[string]string `json:"response_format,omitempty"`
}

func seeded(msgs []prompts.Message, seed int64, n int) request {
	return request{Model: "sim-test", Messages: msgs, N: n, Seed: &seed}
}

// call sends req to h in process; h must not inject truncation faults.
func call(t testing.TB, h http.Handler, req request) (int, []byte) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
	return rec.Code, rec.Body.Bytes()
}

// complete sends req and decodes a 200 response.
func complete(t testing.TB, h http.Handler, req request) chatResponse {
	t.Helper()
	code, body := call(t, h, req)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var resp chatResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("decoding response: %v\n%s", err, body)
	}
	if len(resp.Choices) != max(req.N, 1) {
		t.Fatalf("got %d choices, want %d", len(resp.Choices), max(req.N, 1))
	}
	return resp
}

// byIndex returns the choices' contents in index order.
func byIndex(resp chatResponse) []choice {
	out := make([]choice, len(resp.Choices))
	for _, c := range resp.Choices {
		out[c.Index] = c
	}
	return out
}

var (
	reAnswerTag = regexp.MustCompile(`<answer>(.*?)</answer>\s*$`)
	reBoxed     = regexp.MustCompile(`\\boxed\{(.*)\}\$?\.?\s*$`)
	reFinalIs   = regexp.MustCompile(`The final answer is (.*)$`)
)

// finalAnswer extracts the answer from a rollout the way a tolerant
// extractor would.
func finalAnswer(content string) (string, bool) {
	last := content
	if i := strings.LastIndex(content, "\n"); i >= 0 {
		last = content[i+1:]
	}
	for _, re := range []*regexp.Regexp{reAnswerTag, reBoxed, reFinalIs} {
		if m := re.FindStringSubmatch(last); m != nil {
			return strings.TrimSpace(m[1]), true
		}
	}
	return "", false
}

// testProblems is a fixed set of problems and answers.
func testProblems() map[string]string {
	return map[string]string{
		"A club has 24 members. In how many ways can a committee of 3 members be chosen?": "2024",
		"What is the probability that a fair coin lands heads?":                           "1/2",
		"Solve x^2 - 3x + 2 = 0 and give the solution set.":                               `\{1,2\}`,
		"Solve 1 < x <= 3 written as an interval.":                                        "(1,3]",
		"Compute sin(pi/4).":            `\frac{\sqrt{2}}{2}`,
		"Which day comes after Monday?": "Tuesday",
		"Find the minimum value of x^2 + 6x + 4 over all real numbers x.": "-5",
		"Give the fraction three quarters, negated.":                      `-\frac{3}{4}`,
		"Which choice is right? (A) 1 (B) 2 (C) 3 (D) 4":                  "D",
		"Compute 7/2 as a decimal.":                                       "3.5",
	}
}

func itemIDs(items []schema.Item) []int32 {
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}
