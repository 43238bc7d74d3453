package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroupScratchBytes: a scratch counts the memory of what it holds, so
// that one large group's is not kept.
func TestGroupScratchBytes(t *testing.T) {
	t.Parallel()
	const rolloutBytes = int(unsafe.Sizeof(reward.Rollout{}))
	sc := getGroupScratch()
	sc.rollouts.Take(maxPooledBuffer/rolloutBytes + 1)
	if sc.bytes() <= maxPooledBuffer { // not kept: a pooled scratch may already hold room, so compare with the bound

		t.Fatalf("%d bytes after taking %d rollouts", sc.bytes(), maxPooledBuffer/rolloutBytes+1)
	}
	putGroupScratch(sc)
}

// TestScoreGroupConcurrent: requests scored at once, each in pooled memory,
// answer what they answer one at a time, and that is what encoding/json
// writes for the same group.
func TestScoreGroupConcurrent(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	h := newHarness(t, []schema.Label{lab})
	var bodies []string
	for i := range 12 {
		responses := []string{rewardtest.MarkedResponse, fmt.Sprintf("### Step 1: Guess.\n%d <answer>%d</answer>", i, i)}
		for range i % 4 {
			responses = append(responses, rewardtest.MarkedResponse[:len(rewardtest.MarkedResponse)/(i+1)])
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
