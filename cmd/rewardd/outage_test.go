package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// killableJudge is a simulated judge over loopback that holds the requests
// holding holdMarker until it is killed: then the held connections are cut
// and nothing listens any more; or, when it hangs, every request from then
// on is held and never answered (a wedged server).
type killableJudge struct {
	srv     *httptest.Server
	held    chan struct{}
	served  chan struct{} // one per request answered
	killed  chan struct{}
	hanging chan struct{} // closed when it hangs
	stopped chan struct{} // closed at the end of the test
	kill    func()
	hang    func()
}

func startKillableJudge(t *testing.T) *killableJudge {
	simulator := sim.New(sim.Config{})
	j := &killableJudge{held: make(chan struct{}, 64), served: make(chan struct{}, 1024), killed: make(chan struct{}),
		hanging: make(chan struct{}), stopped: make(chan struct{})}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		select {
		case <-j.hanging:
			<-j.stopped
			panic(http.ErrAbortHandler)
		default:
		}
		if bytes.Contains(body, []byte(holdMarker)) {
			j.held <- struct{}{}
			<-j.killed
			panic(http.ErrAbortHandler) // the connection is cut, as by a crash
		}
		simulator.ServeHTTP(w, r)
		// The answer leaves before the test may kill the judge: a kill
		// cuts connections, and must not cut an answer still buffered here.
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		j.served <- struct{}{}
	}))
	var once, hangOnce sync.Once
	j.kill = func() {
		once.Do(func() {
			close(j.killed)
			close(j.stopped)
			j.srv.CloseClientConnections()
			j.srv.Close()
		})
	}
	j.hang = func() { hangOnce.Do(func() { close(j.hanging) }) }
	t.Cleanup(func() { j.kill(); simulator.Close() })
	return j
}

type rewardsAnswer struct {
	Rewards   []float64            `json:"rewards"`
	ExtraLogs map[string][]float64 `json:"extra_logs"`
}

func queries(n, from int, hold func(int) bool) []string {
	out := make([]string, n)
	for i := range out {
		resp := strings.Replace(markedResponse, "5-3 = 2.", fmt.Sprintf("5-3 = 2 (sample %d).", from+i), 1)
		if hold(i) {
			resp = strings.Replace(resp, "2+3 = 5.", "2+3 = 5. "+holdMarker, 1)
		}
		out[i] = chatMLPrompt + resp + "<|im_end|>"
	}
	return out
}

// TestJudgeKilledMidBatch kills the judge while a batch is at it: the batch
// is answered, the breaker opens, and the next batches are answered within
// seconds, far under --judge-timeout, at the floor with judge_ok false; the
// failure rate is in /metrics and /healthz says degraded.
func TestJudgeKilledMidBatch(t *testing.T) {
	judge := startKillableJudge(t)
	const judgeTimeout = 60 * time.Second
	c := startChild(t, "--corpus", writeCorpus(t), "--addr", "127.0.0.1:0", "--judge-base-url", judge.srv.URL+"/v1",
		"--judge-model", "simulated", "--judge-timeout", judgeTimeout.String(), "--judge-max-attempts", "2",
		"--judge-breaker-failures", "3", "--judge-breaker-probe", "1m",
		"--judge-warm-first=false") // the 16 samples of one rubric at once: 4 held together when the judge dies

	// Batch 1: 16 samples, 4 of them held at the judge when it dies.
	type reply struct {
		code int
		body []byte
		err  error
	}
	first := make(chan reply, 1)
	go func() {
		code, body, err := c.send("/get_reward", mustJSON(t, map[string]any{"query": queries(16, 0, func(i int) bool { return i%4 == 0 })}))
		first <- reply{code, body, err}
	}()
	for range 4 {
		<-judge.held
	}
	for range 12 {
		<-judge.served
	}
	judge.kill()
	r := <-first
	var got rewardsAnswer
	if r.err != nil || r.code != http.StatusOK || json.Unmarshal(r.body, &got) != nil || len(got.Rewards) != 16 {
		t.Fatalf("the batch the judge died under: %d %.300s (%v)", r.code, r.body, r.err)
	}
	for i, ok := range got.ExtraLogs["rubric/judge_ok"] {
		held := i%4 == 0
		// Judged: 2.4; held when the judge died: the floor r_base 1 - |R_PIT| = 0.
		if want := map[bool]float64{true: 0, false: 2.4}[held]; ok == b2f(held) || !near(got.Rewards[i], want) {
			t.Errorf("batch 1 sample %d (held %v): judge_ok %v reward %v, want %v", i, held, ok, got.Rewards[i], want)
		}
	}

	// Batches 2 and 3: the judge is gone. The first calls fail (refused,
	// retried once), the breaker opens, every answer comes at once.
	for b := range 2 {
		start := time.Now()
		code, out := c.post(t, "/get_reward", mustJSON(t, map[string]any{"query": queries(64, 100*(b+1), func(int) bool { return false })}))
		took := time.Since(start)
		var got rewardsAnswer
		if code != http.StatusOK || json.Unmarshal(out, &got) != nil || len(got.Rewards) != 64 {
			t.Fatalf("batch %d after the judge died: %d %.300s", b+2, code, out)
		}
		if took > judgeTimeout/2 {
			t.Errorf("batch %d took %s; with the breaker open it must not wait for the judge timeout (%s)", b+2, took, judgeTimeout)
		}
		for i := range got.Rewards {
			if got.ExtraLogs["rubric/judge_ok"][i] != 0 || !near(got.Rewards[i], 0) {
				t.Errorf("batch %d sample %d: judge_ok %v reward %v, want false at the floor 0", b+2, i, got.ExtraLogs["rubric/judge_ok"][i], got.Rewards[i])
			}
		}
		if rate := got.ExtraLogs["rubric/judge_failure_rate"]; len(rate) != 64 || rate[0] != 1 {
			t.Errorf("batch %d: extra_logs judge_failure_rate %v, want 1", b+2, rate)
		}
	}

	resp, err := http.Get(c.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(health), `"status":"degraded"`) || !strings.Contains(string(health), `"breaker":"open"`) {
		t.Errorf("/healthz: %d %s, want degraded with the breaker open", resp.StatusCode, health)
	}
	req, _ := http.NewRequest(http.MethodGet, c.base+"/metrics", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 4 + 128 of the 144 samples failed in the last minute.
	for _, line := range []string{fmt.Sprintf("rewardd_judge_failure_ratio %v\n", 132.0/144), `rewardd_judge_breaker_state{state="open"} 1` + "\n"} {
		if !strings.Contains(string(metrics), line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestHangingJudge wedges the judge: /healthz says degraded within
// --judge-stall-after, while the first batch waits for the judge timeout;
// then the breaker opens, and the next batch is answered at once.
func TestHangingJudge(t *testing.T) {
	t.Parallel() // most of it is waiting out the judge timeout
	judge := startKillableJudge(t)
	// The judge timeout is waited out once (the first batch); it is long
	// enough that /healthz shows the stall (after 200 ms) well before it,
	// on a loaded machine too.
	const judgeTimeout = 3 * time.Second
	c := startChild(t, "--corpus", writeCorpus(t), "--addr", "127.0.0.1:0", "--judge-base-url", judge.srv.URL+"/v1",
		"--judge-model", "simulated", "--judge-timeout", judgeTimeout.String(), "--judge-breaker-failures", "3", "--judge-breaker-probe", "1m",
		"--judge-stall-after", "200ms")
	judge.hang()
	for b := range 2 {
		start := time.Now()
		type reply struct {
			code int
			out  []byte
			err  error
		}
		answered := make(chan reply, 1)
		body := mustJSON(t, map[string]any{"query": queries(8, 100*b, func(int) bool { return false })})
		go func() {
			code, out, err := c.send("/get_reward", body)
			answered <- reply{code, out, err}
		}()
		var r reply
		if b == 0 {
			r = waitDegraded(t, c.base, answered)
		} else {
			r = <-answered
		}
		took := time.Since(start)
		if r.err != nil {
			t.Fatal(r.err)
		}
		code, out := r.code, r.out
		var got rewardsAnswer
		if code != http.StatusOK || json.Unmarshal(out, &got) != nil || len(got.Rewards) != 8 {
			t.Fatalf("batch %d: %d %.300s", b+1, code, out)
		}
		for i := range got.Rewards {
			if got.ExtraLogs["rubric/judge_ok"][i] != 0 || !near(got.Rewards[i], 0) {
				t.Errorf("batch %d sample %d: judge_ok %v reward %v, want false at the floor", b+1, i, got.ExtraLogs["rubric/judge_ok"][i], got.Rewards[i])
			}
		}
		// Waiting for the judge timeout takes at least judgeTimeout (a timer
		// never fires early), so the bug fails this bound however idle the
		// machine, and a loaded machine cannot stretch an answer given at
		// once into a failure short of that.
		if b == 1 && took >= judgeTimeout {
			t.Errorf("the batch after the breaker opened took %s, want far less than the judge timeout %s", took, judgeTimeout)
		}
	}
}

// waitDegraded polls /healthz until it says degraded with stalled judge
// calls, and fails the test when the batch is answered first (after the
// judge timeout: the hung judge was not seen); it returns the batch's
// answer.
func waitDegraded[R any](t *testing.T, base string, answered <-chan R) R {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-answered:
			t.Errorf("the batch at the hung judge was answered before /healthz said degraded")
			return r
		case <-tick.C:
		}
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Status string
			Judge  struct {
				Stalled int `json:"stalled_calls"`
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err == nil && h.Status == "degraded" && h.Judge.Stalled > 0 {
			return <-answered
		}
	}
}
