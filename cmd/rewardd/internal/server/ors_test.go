package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// orsDo sends one request and returns the status and the whole body.
type orsDo func(method, path, body string, header ...string) (int, []byte)

// httpDo is orsDo over HTTP to base.
func httpDo(t *testing.T, base string) orsDo {
	return func(method, path, body string, header ...string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: reading: %v", method, path, err)
		}
		return resp.StatusCode, out
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// parseSSE reads events as the SDK's client does: event and data fields,
// comments skipped, an event ends at a blank line.
func parseSSE(t *testing.T, r io.Reader, each func(sseEvent) bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				ev.data = strings.Join(data, "\n")
				if !each(ev) {
					return
				}
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				ev.name = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

// streamResult is the JSON of a stream's end event, after its task_id.
func streamResult(t *testing.T, body []byte) (taskID string, result map[string]json.RawMessage) {
	t.Helper()
	parseSSE(t, strings.NewReader(string(body)), func(ev sseEvent) bool {
		switch ev.name {
		case "task_id":
			taskID = ev.data
		case "end":
			if ev.data != "" {
				if err := json.Unmarshal([]byte(ev.data), &result); err != nil {
					t.Fatalf("end event %q: %v", ev.data, err)
				}
			}
			return false
		}
		return true
	})
	if taskID == "" {
		t.Fatalf("no task_id event in %q", body)
	}
	return taskID, result
}

// orsOutput is a RunToolSuccess's output.
type orsOutput struct {
	Blocks   []orsTextBlock `json:"blocks"`
	Metadata reward.Result  `json:"metadata"`
	Reward   *float64       `json:"reward"`
	Finished bool           `json:"finished"`
}

// orsEpisode is a session through the protocol's steps.
type orsEpisode struct {
	t   *testing.T
	do  orsDo
	sid string
}

// openEpisode gets a session id from /create_session and creates the
// session for task.
func openEpisode(t *testing.T, do orsDo, create map[string]any, header ...string) *orsEpisode {
	t.Helper()
	code, body := do(http.MethodPost, "/create_session", "", header...)
	if code != http.StatusOK {
		t.Fatalf("/create_session: %d %s", code, body)
	}
	sid, _ := streamResult(t, body)
	e := &orsEpisode{t: t, do: do, sid: sid}
	if code, out := e.call(http.MethodPost, "/create", mustJSON(t, create), header...); code != http.StatusOK || !strings.Contains(string(out), sid) {
		t.Fatalf("/create: %d %s", code, out)
	}
	return e
}

func (e *orsEpisode) call(method, path, body string, header ...string) (int, []byte) {
	e.t.Helper()
	return e.do(method, path, body, append([]string{"X-Session-ID", e.sid}, header...)...)
}

// answer calls the answer tool and returns its RunToolOutput.
func (e *orsEpisode) answer(text string, header ...string) (ok bool, out orsOutput, errMsg string) {
	e.t.Helper()
	code, body := e.call(http.MethodPost, "/rubricforge/call", mustJSON(e.t, map[string]any{"name": "answer", "input": map[string]string{"answer": text}}), header...)
	if code != http.StatusOK {
		e.t.Fatalf("/call: %d %s", code, body)
	}
	_, res := streamResult(e.t, body)
	if err := json.Unmarshal(res["ok"], &ok); err != nil {
		e.t.Fatalf("/call: no ok in %s", body)
	}
	if !ok {
		_ = json.Unmarshal(res["error"], &errMsg)
		return false, out, errMsg
	}
	if err := json.Unmarshal(res["output"], &out); err != nil {
		e.t.Fatalf("/call: output %s: %v", res["output"], err)
	}
	return true, out, ""
}

// TestORSEpisodeScoresAsV1Score drives whole episodes over HTTP as the ORS
// client does (list the environments, splits and tasks, create a session,
// read the prompt and the tools, call the answer tool, read the streamed
// output, delete the session), for a math corpus and a grounded one: the
// reward is /v1/score's for the same answer, the episode is finished, and a
// deleted session is gone.
func TestORSEpisodeScoresAsV1Score(t *testing.T) {
	t.Parallel()
	grounded := rewardtest.GroundedLabels(t)
	gh, _ := groundedHarness(t, grounded, sim.Config{})
	for _, tc := range []struct {
		name       string
		h          *harness
		id, answer string
		prompt     []string // what the prompt's text holds
		want       float64
	}{
		{"math", newHarness(t, []schema.Label{rewardtest.DemoLabel()}), "sum-2-3", rewardtest.MarkedResponse,
			[]string{"What is 2+3?", "### Step 1:", "<answer>"}, markedSRaRReward},
		{"grounded", gh, grounded[0].ID, rewardtest.Scored3, []string{rewardtest.WalQuestion}, 5.0 / 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(tc.h.srv)
			defer ts.Close()
			do := httpDo(t, ts.URL)
			getJSON := func(method, path, body string, v any) {
				t.Helper()
				code, out := do(method, path, body)
				if code != http.StatusOK {
					t.Fatalf("%s %s: %d %s", method, path, code, out)
				}
				if err := json.Unmarshal(out, v); err != nil {
					t.Fatalf("%s %s: %s: %v", method, path, out, err)
				}
			}
			var envs []string
			getJSON(http.MethodGet, "/list_environments", "", &envs)
			var splits []orsSplit
			getJSON(http.MethodGet, "/rubricforge/splits", "", &splits)
			var tasks struct {
				Tasks   []map[string]any `json:"tasks"`
				EnvName string           `json:"env_name"`
			}
			getJSON(http.MethodPost, "/rubricforge/tasks", `{"split": "train"}`, &tasks)
			var n struct {
				NumTasks int `json:"num_tasks"`
			}
			getJSON(http.MethodPost, "/rubricforge/num_tasks", `{"split": "train"}`, &n)
			if len(envs) != 1 || envs[0] != "rubricforge" || len(splits) != 1 || splits[0] != (orsSplit{"train", "train"}) ||
				len(tasks.Tasks) != n.NumTasks || n.NumTasks != tc.h.srv.cfg.Index.Len() || tasks.EnvName != "rubricforge" {
				t.Fatalf("catalog: environments %v, splits %v, %d tasks (num_tasks %d) of %s", envs, splits, len(tasks.Tasks), n.NumTasks, tasks.EnvName)
			}
			var task map[string]any
			for _, tk := range tasks.Tasks {
				if tk["id"] == tc.id {
					task = tk
				}
			}
			if task == nil {
				t.Fatalf("task %s not listed: %v", tc.id, tasks.Tasks)
			}

			e := openEpisode(t, do, map[string]any{"env_name": "rubricforge", "task_spec": task})
			code, out := e.call(http.MethodGet, "/rubricforge/prompt", "")
			var blocks []orsTextBlock
			if code != http.StatusOK || json.Unmarshal(out, &blocks) != nil || len(blocks) == 0 {
				t.Fatalf("/prompt: %d %s", code, out)
			}
			for _, want := range tc.prompt {
				if !strings.Contains(blocks[len(blocks)-1].Text, want) {
					t.Errorf("the prompt %q lacks %q", blocks[len(blocks)-1].Text, want)
				}
			}
			if code, out := e.call(http.MethodGet, "/rubricforge/task_tools", ""); code != http.StatusOK || !strings.Contains(string(out), `"name":"answer"`) {
				t.Errorf("/task_tools: %d %s", code, out)
			}
			if code, out := e.call(http.MethodPost, "/ping", ""); code != http.StatusOK {
				t.Errorf("/ping: %d %s", code, out)
			}

			ok, got, msg := e.answer(tc.answer)
			if !ok || got.Reward == nil || !got.Finished || len(got.Blocks) != 1 || !strings.Contains(got.Blocks[0].Text, "reward") {
				t.Fatalf("the answer's output: ok %v %+v %s", ok, got, msg)
			}
			var v1 scoreAnswer
			getJSON(http.MethodPost, "/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": tc.id, "response": tc.answer}}}), &v1)
			// The ORS reward is the score: the reward mapped to [0, 1], so that
			// an episode without an answer (no reward, counted 0) earns no
			// more than any answer.
			if *got.Reward != v1.Results[0].Score || got.Metadata.Reward != v1.Results[0].Reward || !rewardtest.Near(got.Metadata.Reward, tc.want) || !got.Metadata.JudgeOK {
				t.Errorf("ORS reward %v (metadata reward %v), /v1/score's score %v (reward %v), want the reward %v", *got.Reward, got.Metadata.Reward, v1.Results[0].Score, v1.Results[0].Reward, tc.want)
			}
			if ok, _, msg := e.answer(tc.answer); ok || !strings.Contains(msg, "finished") {
				t.Errorf("a second answer in the finished episode: ok %v %q", ok, msg)
			}

			for _, path := range []string{"/delete", "/delete_session"} {
				if code, out := e.call(http.MethodPost, path, ""); code != http.StatusOK {
					t.Errorf("%s: %d %s", path, code, out)
				}
			}
			if code, out := e.call(http.MethodGet, "/rubricforge/prompt", ""); code != http.StatusNotFound {
				t.Errorf("/prompt of the deleted session: %d %s, want 404", code, out)
			}
		})
	}
}

// TestORSCreateAndCatalogErrors checks the answers to bad ORS requests:
// each names what is wrong.
func TestORSCreateAndCatalogErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		code                     int
		says                     string
	}{
		{"unknown split", http.MethodPost, "/rubricforge/tasks", `{"split": "dev"}`, nil, 400, `dev\" is not a split of the corpus (train)`},
		{"index out of range", http.MethodPost, "/rubricforge/task", `{"split": "train", "index": 1}`, nil, 400, "index"},
		{"no session id", http.MethodPost, "/create", `{"split": "train", "index": 0}`, nil, 400, "X-Session-ID"},
		{"neither spec nor index", http.MethodPost, "/create", `{}`, []string{"X-Session-ID", "s1"}, 400, "task_spec or both split and index"},
		{"both spec and index", http.MethodPost, "/create", `{"task_spec": {"id": "sum-2-3"}, "split": "train", "index": 0}`, []string{"X-Session-ID", "s1"}, 400, "either"},
		{"unknown problem", http.MethodPost, "/create", `{"task_spec": {"id": "nope"}}`, []string{"X-Session-ID", "s1"}, 400, `nope\" is not a problem`},
		{"other environment", http.MethodPost, "/create", `{"env_name": "gsm8k", "split": "train", "index": 0}`, []string{"X-Session-ID", "s1"}, 404, "unknown environment"},
		{"unknown session", http.MethodGet, "/rubricforge/prompt", ``, []string{"X-Session-ID", "never"}, 404, "no such session"},
		{"wrong method", http.MethodPost, "/rubricforge/prompt", ``, nil, 405, "takes GET"},
		{"control body too large", http.MethodPost, "/rubricforge/tasks", `{"split": "` + strings.Repeat("x", maxORSControlBody) + `"}`, nil, 413, "larger than"},
	} {
		code, out := h.do(tc.method, tc.path, tc.body, tc.header...)
		if code != tc.code || !strings.Contains(string(out), tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, code, out, tc.code, tc.says)
		}
	}
	e := openEpisode(t, orsDo(h.do), map[string]any{"split": "train", "index": 0})
	for _, tc := range []struct{ name, body, says string }{
		{"unknown tool", `{"name": "submit", "input": {"answer": "5"}}`, `no tool \"submit\"`},
		{"no answer", `{"name": "answer", "input": {"text": "5"}}`, "input.answer: required"},
	} {
		code, out := e.call(http.MethodPost, "/rubricforge/call", tc.body)
		_, res := streamResult(t, out)
		if code != http.StatusOK || string(res["ok"]) != "false" || !strings.Contains(string(res["error"]), tc.says) {
			t.Errorf("%s: %d %s, want a RunToolError saying %q", tc.name, code, out, tc.says)
		}
	}
	if code, out := h.do(http.MethodPost, "/create", `{"split": "train", "index": 0}`, "X-Session-ID", e.sid); code != 400 || !strings.Contains(string(out), "already exists") {
		t.Errorf("a second /create of a session: %d %s", code, out)
	}
}

// fakeClock is a clock a test moves.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// serve runs the harness's server on a loopback listener (with its session
// reaper) until the test ends, and returns its base URL.
func serve(t *testing.T, h *harness) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestORSAbandonedSessionsAreReaped opens 5,000 sessions and abandons
// them: the heap they take is given back once they are idle past
// SessionIdle (the reaper of Serve drops them), and at MaxSessions a new
// session is refused with 503 until the idle ones are dropped.
func TestORSAbandonedSessionsAreReaped(t *testing.T) {
	const sessions = 5_000
	clock := &fakeClock{}
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config, _ *sim.Config) {
		c.ORS = ORSOptions{MaxSessions: sessions, SessionIdle: time.Minute, ReapEvery: 5 * time.Millisecond, Now: clock.now}
	})
	serve(t, h)
	create := `{"split": "train", "index": 0}`
	before := liveHeap()
	for i := range sessions {
		if code, out := h.do(http.MethodPost, "/create", create, "X-Session-ID", fmt.Sprintf("abandoned-session-%05d", i)); code != http.StatusOK {
			t.Fatalf("session %d: %d %s", i, code, out)
		}
	}
	peak := liveHeap()
	code, out := h.do(http.MethodPost, "/create", create, "X-Session-ID", "one-too-many")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(out), "--ors-max-sessions") {
		t.Errorf("session %d: %d %s, want 503 naming --ors-max-sessions", sessions+1, code, out)
	}
	clock.advance(2 * time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for h.srv.sessions.len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions left 10s after their idle timeout", h.srv.sessions.len())
		}
		time.Sleep(5 * time.Millisecond)
	}
	after := liveHeap()
	grew := int64(peak) - int64(before)
	t.Logf("heap: %d before, %d with %d sessions, %d after the idle timeout", before, peak, sessions, after)
	// Each session takes about 150 bytes; less than 50 and the test would
	// not see the heap given back.
	if grew < 50*sessions || int64(after)-int64(before) > grew/4 {
		t.Errorf("heap %d before, %d with the sessions, %d after they were reaped: want it back within a quarter of the growth", before, peak, after)
	}
	if _, m := h.do(http.MethodGet, "/metrics", ""); !strings.Contains(string(m), "rewardd_ors_sessions 0\n") {
		t.Errorf("/metrics does not show the sessions dropped")
	}
	if code, out := h.do(http.MethodPost, "/create", create, "X-Session-ID", "after-the-reaping"); code != http.StatusOK {
		t.Errorf("a session after the reaping: %d %s", code, out)
	}
}

// TestORSClientGoneMidStreamLeaksNoGoroutine: a client that goes away while
// its answer is being judged cancels the judging, and every goroutine the
// call started ends (counted).
func TestORSClientGoneMidStreamLeaksNoGoroutine(t *testing.T) {
	g := newGate()
	defer g.release()
	h := newHarnessVia(t, []schema.Label{rewardtest.DemoLabel()}, g.wrap)
	base := serve(t, h)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	do := func(method, path, body string, header ...string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	e := openEpisode(t, do, map[string]any{"split": "train", "index": 0})
	baseline := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rubricforge/call",
		strings.NewReader(mustJSON(t, map[string]any{"name": "answer", "input": map[string]string{"answer": rewardtest.TwoSteps + holdMarker}})))
	req.Header.Set("X-Session-ID", e.sid)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	gotID := false
	parseSSE(t, resp.Body, func(ev sseEvent) bool { gotID = ev.name == "task_id"; return false })
	<-g.held // the judge has the answer
	if !gotID || runtime.NumGoroutine() <= baseline {
		t.Fatalf("mid-stream: task_id event %v, %d goroutines (baseline %d)", gotID, runtime.NumGoroutine(), baseline)
	}
	cancel()
	resp.Body.Close()
	client.CloseIdleConnections()
	// The held judge request sees its caller go away before the gate opens:
	// the goroutine count alone can fall to the baseline first (the
	// baseline holds connections of earlier requests still closing).
	select {
	case <-g.gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the held judge request did not see the client go away in 10s")
	}
	// The call ends when its handler has given the session back; only then
	// does the session take another answer, and only then is the count
	// meaningful (it can reach the baseline while the handler still runs,
	// when connections of earlier requests close meanwhile).
	deadline := time.Now().Add(10 * time.Second)
	for {
		sess, err := h.srv.sessions.touch(e.sid)
		if err != nil {
			t.Fatalf("the session after the client went away: %v", err)
		}
		if !sess.scoring {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call whose client went away was still being scored 10s later")
		}
		time.Sleep(time.Millisecond)
	}
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines 10s after the client went away, baseline %d:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The session takes the answer again: the call that went away did not
	// finish the episode.
	g.release()
	if ok, out, msg := e.answer(rewardtest.MarkedResponse); !ok || !out.Finished {
		t.Errorf("the answer after the client came back: ok %v %+v %s", ok, out, msg)
	}
}

// TestORSReconnectReplaysTheOutput: a call that names the task_id of a
// scored call gets its output again, without a second judgment.
func TestORSReconnectReplaysTheOutput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	e := openEpisode(t, orsDo(h.do), map[string]any{"split": "train", "index": 0})
	body := mustJSON(t, map[string]any{"name": "answer", "input": map[string]string{"answer": rewardtest.MarkedResponse}})
	_, first := e.call(http.MethodPost, "/rubricforge/call", body)
	taskID, res := streamResult(t, first)
	calls := h.simulator.Count()
	_, again := e.call(http.MethodPost, "/rubricforge/call", mustJSON(t, map[string]any{"name": "answer", "input": map[string]string{"answer": rewardtest.MarkedResponse}, "task_id": taskID}))
	id2, res2 := streamResult(t, again)
	if id2 != taskID || string(res2["output"]) != string(res["output"]) || h.simulator.Count() != calls {
		t.Errorf("the replay: task_id %s (want %s), output %s (want %s), %d judge requests more", id2, taskID, res2["output"], res["output"], h.simulator.Count()-calls)
	}
}

// TestIndexKeepsTheCorpusSplits: the ORS splits are the corpus's: a
// record's own split column, else the split an export's file is named
// after, else train.
func TestIndexKeepsTheCorpusSplits(t *testing.T) {
	t.Parallel()
	type record struct {
		ID      string        `parquet:"id"`
		Source  string        `parquet:"source"`
		Problem string        `parquet:"problem"`
		Answer  string        `parquet:"answer"`
		Style   string        `parquet:"style"`
		Split   string        `parquet:"split"`
		Rubric  []schema.Item `parquet:"rubric,list"`
	}
	rec := func(id, split string) record {
		return record{ID: id, Problem: "Problem " + id, Answer: "5", Style: schema.StyleSRaR, Split: split, Rubric: rewardtest.SRaRItems()}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		rows []record
		want map[string][]string
	}{
		{"shard.parquet", []record{rec("a", "test"), rec("b", "train"), rec("c", "test"), rec("d", "")}, map[string][]string{"train": {"b", "d"}, "test": {"a", "c"}}},
		{"validation-00000-of-00001.parquet", []record{rec("e", ""), rec("f", "")}, map[string][]string{"validation": {"e", "f"}}},
	} {
		path := filepath.Join(dir, tc.name)
		if err := parquet.WriteFile(path, tc.rows); err != nil {
			t.Fatal(err)
		}
		x, _, err := LoadIndex(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var splits []string
		for _, s := range []string{"train", "validation", "test"} {
			if _, ok := tc.want[s]; ok {
				splits = append(splits, s)
			}
		}
		if got := x.Splits(); !slices.Equal(got, splits) {
			t.Errorf("%s: splits %v, want %v", tc.name, got, splits)
		}
		for s, ids := range tc.want {
			var got []string
			for _, l := range x.Split(s) {
				got = append(got, l.ID)
			}
			if !slices.Equal(got, ids) {
				t.Errorf("%s: split %s holds %v, want %v", tc.name, s, got, ids)
			}
		}
	}
}
