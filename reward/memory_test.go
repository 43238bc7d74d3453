package reward

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestScoreGroupReusesMemory: a group scored in reused memory is the group
// ScoreGroup returns, whatever the scheme and the group scored before.
func TestScoreGroupReusesMemory(t *testing.T) {
	items := benchRubric()
	lab := testLabel(items)
	groups := [][]Rollout{benchGroup(16, items), benchGroup(3, items[:4]), benchGroup(20, items)}
	groups[1][1].Verdicts, groups[1][1].JudgeErr = nil, "satisfaction judge: down"
	var mem groupMemory
	for _, scheme := range schema.Schemes {
		for _, rs := range groups {
			mem.reset()
			got := scoreGroup(DefaultParams(), OnJudgeFailureFloor, scheme, lab, rs, &mem)
			if want := ScoreGroup(DefaultParams(), scheme, lab, rs); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, %d rollouts: reused memory gives\n%+v\nnot\n%+v", scheme, len(rs), got.Results[0], want.Results[0])
			}
		}
	}
}

func TestSlab(t *testing.T) {
	var s slab[int]
	if a := s.take(0); a == nil {
		t.Fatal("an empty take is nil")
	}
	a := s.take(3)
	a[0] = 7
	b := s.take(2)
	if len(a) != 3 || cap(a) != 3 || len(b) != 2 || a[0] != 7 {
		t.Fatalf("takes %v %v", a, b)
	}
	s.reset()
	if c := s.take(3); c[0] != 0 {
		t.Fatalf("a take after reset is not zeroed: %v", c)
	}
}

// TestGroupScratchBytes: a scratch counts the memory of what it holds, so
// that one large group's is not kept.
func TestGroupScratchBytes(t *testing.T) {
	sc := getGroupScratch()
	sc.mem.items.take(maxPooledBuffer/32 + 1)
	if sc.bytes() <= maxPooledBuffer { // not kept: a pooled scratch may already hold room, so compare with the bound

		t.Fatalf("%d bytes after taking %d item verdicts", sc.bytes(), maxPooledBuffer/32+1)
	}
	putGroupScratch(sc)
}

// TestScoreGroupConcurrent: requests scored at once, each in pooled memory,
// answer what they answer one at a time, and that is what encoding/json
// writes for the same group.
func TestScoreGroupConcurrent(t *testing.T) {
	lab := demoLabel()
	h := newHarness(t, []schema.Label{lab})
	var bodies []string
	for i := range 12 {
		responses := []string{markedResponse, fmt.Sprintf("### Step 1: Guess.\n%d <answer>%d</answer>", i, i)}
		for range i % 4 {
			responses = append(responses, markedResponse[:len(markedResponse)/(i+1)])
		}
		bodies = append(bodies, mustJSON(t, map[string]any{"request_id": fmt.Sprint("r", i), "problem_id": lab.ID,
			"scheme": schema.Schemes[i%len(schema.Schemes)], "responses": responses}))
	}
	want := make([][]byte, len(bodies))
	for i, body := range bodies {
		code, out := h.do(http.MethodPost, pathV1ScoreGroup, body)
		var g groupJSON
		if err := json.Unmarshal(out, &g); code != http.StatusOK || err != nil {
			t.Fatalf("%d %s: %v", code, out, err)
		}
		if re := encodingJSON(t, g); !bytes.Equal(out, re) {
			t.Fatalf("the answer is not what encoding/json writes:\n got %s\nwant %s", out, re)
		}
		want[i] = out
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(bodies)*8)
	for range 8 {
		wg.Go(func() {
			for i, body := range bodies {
				rec := httptest.NewRecorder()
				h.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, pathV1ScoreGroup, strings.NewReader(body)))
				if !bytes.Equal(rec.Body.Bytes(), want[i]) {
					errs <- fmt.Sprintf("group %d:\n got %s\nwant %s", i, rec.Body, want[i])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
