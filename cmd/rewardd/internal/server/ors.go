package server

// The Open Reward Standard (ORS) environment: a corpus served as an
// environment whose splits are the corpus's splits, whose tasks are its
// problems (a grounded record's questions one by one), whose prompt is the
// verl export's prompt, and whose one tool, answer, scores the policy's
// answer with the problem's rubric by the path /v1/score takes (scheme,
// judge, failure floor, breaker, admission, metrics) and ends the episode.
// Written from the protocol's definition in openrewardstandard/python-sdk
// (src/ors/server.py, types.py and the client, commit 34b9c21b): routes,
// X-Session-ID and X-API-Key headers, and the server-sent events of
// /create_session and /{env}/call (task_id, then end with the JSON).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// The metrics labels of the ORS routes.
const (
	pathORSCatalog = "/ors/catalog" // health, environments, tools, splits, tasks
	pathORSSession = "/ors/session" // create_session, create, ping, prompt, task_tools, delete
	pathORSCall    = "/ors/call"    // the answer tool
)

// orsOp is an ORS route: its name, method and metrics label.
type orsOp struct {
	name, method, label string
}

// maxORSControlBody bounds the body of an ORS request other than a tool
// call (a task's split and index, a session's task spec).
const maxORSControlBody = 1 << 20

// orsToolAnswer is the environment's one tool.
const orsToolAnswer = "answer"

// orsRoute finds the ORS route of path: the environment's own routes
// (/{env}/...) or the server-wide ones.
func (s *Server) orsRoute(path string) (orsOp, bool) {
	if s.cfg.Index == nil {
		return orsOp{}, false
	}
	get, post := http.MethodGet, http.MethodPost
	switch path {
	case "/health":
		return orsOp{"health", get, pathORSCatalog}, true
	case "/list_environments":
		return orsOp{"list_environments", get, pathORSCatalog}, true
	case "/create_session", "/create", "/ping", "/delete", "/delete_session":
		return orsOp{path[1:], post, pathORSSession}, true
	}
	env, op, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok || !strings.EqualFold(env, s.cfg.ORS.Env) {
		return orsOp{}, false
	}
	switch op {
	case "tools", "splits":
		return orsOp{op, get, pathORSCatalog}, true
	case "tasks", "num_tasks", "task", "task_range":
		return orsOp{op, post, pathORSCatalog}, true
	case "task_tools", "prompt":
		return orsOp{op, get, pathORSSession}, true
	case "call":
		return orsOp{op, post, pathORSCall}, true
	}
	return orsOp{}, false
}

// serveORS answers an ORS request whose route and method are checked.
func (s *Server) serveORS(w http.ResponseWriter, r *http.Request, op orsOp) {
	switch op.name {
	case "health":
		s.answer(w, map[string]string{"status": "ok"})
	case "list_environments":
		s.answer(w, []string{s.cfg.ORS.Env})
	case "tools":
		s.answer(w, orsTools())
	case "splits":
		s.answer(w, s.orsSplits())
	case "create_session":
		s.orsCreateSession(w)
	case "call":
		s.orsCall(w, r)
	case "task_tools", "prompt", "ping", "delete", "delete_session":
		s.orsWithSession(w, r, op.name)
	default: // tasks, num_tasks, task, task_range, create: a small JSON body
		r.Body = http.MaxBytesReader(w, r.Body, maxORSControlBody)
		body, release, ok := s.readBody(w, r)
		if !ok {
			return
		}
		defer release()
		if op.name == "create" {
			s.orsCreate(w, r, body)
			return
		}
		s.orsCatalog(w, op.name, body)
	}
}

// orsToolSpec is a tool as ORS lists it.
type orsToolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

func orsTools() map[string][]orsToolSpec {
	return map[string][]orsToolSpec{"tools": {{
		Name: orsToolAnswer,
		Description: "Submit your complete response to the task (your reasoning and final answer, as the prompt asks). " +
			"It is graded once against the task's rubric; the output carries the reward and ends the episode.",
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"answer": map[string]any{"type": "string", "description": "the complete response to grade"}},
			"required":   []string{"answer"},
		},
	}}}
}

// orsSplit is a split as ORS lists it: its type is train, validation or
// test (another name is a validation split, as the SDK's server has it).
type orsSplit struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func (s *Server) orsSplits() []orsSplit {
	out := []orsSplit{}
	for _, name := range s.cfg.Index.Splits() {
		typ := "validation"
		if slices.Contains(corpus.ExportSplits, name) {
			typ = name
		}
		out = append(out, orsSplit{name, typ})
	}
	return out
}

// orsTask is a task spec: the problem's id (a grounded question's id) and
// its split. It carries no rubric, answer or passage.
type orsTask struct {
	ID    string `json:"id"`
	Split string `json:"split"`
}

// orsTaskQuery is the body of tasks, num_tasks, task and task_range.
type orsTaskQuery struct {
	Split string `json:"split"`
	Index *int   `json:"index"`
	Start *int   `json:"start"`
	Stop  *int   `json:"stop"`
}

// orsCatalog answers tasks, num_tasks, task and task_range.
func (s *Server) orsCatalog(w http.ResponseWriter, op string, body []byte) {
	var q orsTaskQuery
	if err := decodeJSON(body, &q); err != nil {
		writeORSError(w, http.StatusBadRequest, err.Error())
		return
	}
	labs := s.cfg.Index.Split(q.Split)
	if labs == nil {
		writeORSError(w, http.StatusBadRequest, fmt.Sprintf("split: %q is not a split of the corpus (%s)", q.Split, strings.Join(s.cfg.Index.Splits(), ", ")))
		return
	}
	switch op {
	case "num_tasks":
		s.answer(w, map[string]int{"num_tasks": len(labs)})
	case "tasks":
		s.answer(w, map[string]any{"tasks": orsTasks(labs, q.Split), "env_name": s.cfg.ORS.Env})
	case "task":
		if q.Index == nil || *q.Index < 0 || *q.Index >= len(labs) {
			writeORSError(w, http.StatusBadRequest, fmt.Sprintf("index: required, 0 to %d in split %q", len(labs)-1, q.Split))
			return
		}
		s.answer(w, map[string]orsTask{"task": {labs[*q.Index].ID, q.Split}})
	case "task_range":
		lo, hi := sliceBounds(len(labs), q.Start, q.Stop)
		s.answer(w, map[string]any{"tasks": orsTasks(labs[lo:hi], q.Split)})
	}
}

func orsTasks(labs []*schema.Label, split string) []orsTask {
	out := make([]orsTask, len(labs))
	for i, l := range labs {
		out[i] = orsTask{l.ID, split}
	}
	return out
}

// sliceBounds are the bounds of Python's range(n)[start:stop]: a negative
// bound counts from the end, both are clamped to [0, n], and an empty
// range is [lo, lo].
func sliceBounds(n int, start, stop *int) (lo, hi int) {
	at := func(p *int, def int) int {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += n
		}
		return min(max(v, 0), n)
	}
	lo, hi = at(start, 0), at(stop, n)
	return lo, max(lo, hi)
}

// orsCreateSession streams a new session id, as the SDK's server does: an
// id event, then end. The session exists once /create names its task.
func (s *Server) orsCreateSession(w http.ResponseWriter) {
	ev := newEventStream(w)
	ev.event("task_id", newID())
	ev.event("end", "")
}

// orsCreateRequest is the body of /create: a task by its spec or by split
// and index. Secrets are accepted and never kept or logged.
type orsCreateRequest struct {
	EnvName  *string         `json:"env_name"`
	TaskSpec json.RawMessage `json:"task_spec"`
	Split    *string         `json:"split"`
	Index    *int            `json:"index"`
}

func (s *Server) orsCreate(w http.ResponseWriter, r *http.Request, body []byte) {
	sid := strings.TrimSpace(r.Header.Get("X-Session-ID"))
	if err := checkSessionID(sid); err != nil {
		writeORSError(w, http.StatusBadRequest, err.Error())
		return
	}
	var req orsCreateRequest
	if err := decodeJSON(body, &req); err != nil {
		writeORSError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.EnvName != nil && !strings.EqualFold(*req.EnvName, s.cfg.ORS.Env) {
		writeORSError(w, http.StatusNotFound, fmt.Sprintf("env_name: unknown environment %q; this server's is %q", *req.EnvName, s.cfg.ORS.Env))
		return
	}
	lab, err := s.orsTaskOf(&req)
	if err != nil {
		writeORSError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch err := s.sessions.create(sid, lab); {
	case errors.Is(err, errTooManySessions):
		w.Header().Set("Retry-After", "5")
		writeORSError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		writeORSError(w, http.StatusBadRequest, err.Error())
	default:
		s.answer(w, map[string]string{"sid": sid})
	}
}

// orsTaskOf finds the problem a /create names: by task_spec's id, or by
// split and index.
func (s *Server) orsTaskOf(req *orsCreateRequest) (*schema.Label, error) {
	hasSpec := len(req.TaskSpec) > 0 && string(req.TaskSpec) != "null"
	hasIndex := req.Split != nil && req.Index != nil
	if hasSpec == hasIndex || (req.Split == nil) != (req.Index == nil) {
		return nil, errors.New("give either task_spec or both split and index")
	}
	if hasIndex {
		labs := s.cfg.Index.Split(*req.Split)
		if labs == nil {
			return nil, fmt.Errorf("split: %q is not a split of the corpus (%s)", *req.Split, strings.Join(s.cfg.Index.Splits(), ", "))
		}
		if *req.Index < 0 || *req.Index >= len(labs) {
			return nil, fmt.Errorf("index: %d is not 0 to %d in split %q", *req.Index, len(labs)-1, *req.Split)
		}
		return labs[*req.Index], nil
	}
	var spec orsTask
	if err := json.Unmarshal(req.TaskSpec, &spec); err != nil || spec.ID == "" {
		return nil, errors.New(`task_spec: expected {"id": PROBLEM_ID, ...}, a task as /{env}/tasks lists it`)
	}
	lab, ok := s.cfg.Index.ByID(spec.ID)
	if !ok {
		return nil, fmt.Errorf("task_spec.id: %q is not a problem of the corpus", spec.ID)
	}
	return lab, nil
}

// orsWithSession answers the requests that name a session.
func (s *Server) orsWithSession(w http.ResponseWriter, r *http.Request, op string) {
	sid := strings.TrimSpace(r.Header.Get("X-Session-ID"))
	if err := checkSessionID(sid); err != nil {
		writeORSError(w, http.StatusBadRequest, err.Error())
		return
	}
	if op == "delete" || op == "delete_session" {
		s.sessions.remove(sid)
		s.answer(w, map[string]string{"sid": sid})
		return
	}
	sess, err := s.sessions.touch(sid)
	if err != nil {
		writeORSError(w, http.StatusNotFound, err.Error())
		return
	}
	switch op {
	case "ping":
		s.answer(w, map[string]string{"status": "ok"})
	case "task_tools":
		s.answer(w, orsTools())
	case "prompt":
		blocks, err := s.orsPrompt(sess.lab)
		if err != nil {
			writeORSError(w, http.StatusInternalServerError, err.Error())
			return
		}
		s.answer(w, blocks)
	}
}

// orsTextBlock is a text block of a prompt or a tool output.
type orsTextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// orsPrompt is the prompt of lab as the verl export writes it, one text
// block per message: a math problem of the srar or factual_process style
// inside the rollout template (its step headers and answer tag are what the
// format reward checks), another problem bare, a grounded question alone.
func (s *Server) orsPrompt(lab *schema.Label) ([]orsTextBlock, error) {
	if lab.Grounded != nil || (lab.Style != schema.StyleSRaR && lab.Style != schema.StyleFactualProcess) {
		return []orsTextBlock{{"text", lab.Question}}, nil
	}
	msgs, err := s.cfg.Prompts.RolloutMessages(lab.Question)
	if err != nil {
		return nil, fmt.Errorf("rendering the rollout template for problem %s: %w", lab.ID, err)
	}
	out := make([]orsTextBlock, len(msgs))
	for i, m := range msgs {
		out[i] = orsTextBlock{"text", m.Content}
	}
	return out, nil
}

// orsToolCall is the body of /{env}/call.
type orsToolCall struct {
	Name   string                     `json:"name"`
	Input  map[string]json.RawMessage `json:"input"`
	TaskID string                     `json:"task_id"`
}

// orsCall runs the answer tool: the body is read within the byte budget,
// the call takes a scoring slot, and its output streams as server-sent
// events (task_id, comment pings while the judge works, then end with the
// RunToolOutput JSON). A client that reconnects with the call's task_id
// gets the scored output again; one that goes away cancels the judging.
func (s *Server) orsCall(w http.ResponseWriter, r *http.Request) {
	sid := strings.TrimSpace(r.Header.Get("X-Session-ID"))
	if err := checkSessionID(sid); err != nil {
		writeORSError(w, http.StatusBadRequest, err.Error())
		return
	}
	body, release, ok := s.readBody(w, r)
	if !ok {
		return
	}
	defer release()
	var call orsToolCall
	if err := decodeJSON(body, &call); err != nil {
		writeORSError(w, http.StatusBadRequest, err.Error())
		return
	}
	sess, err := s.sessions.touch(sid)
	if err != nil {
		writeORSError(w, http.StatusNotFound, err.Error())
		return
	}
	if call.TaskID != "" && call.TaskID == sess.callID && sess.output != nil {
		ev := newEventStream(w)
		ev.event("task_id", call.TaskID)
		ev.event("end", string(sess.output))
		return
	}
	answer, msg := answerInput(call)
	if msg != "" {
		s.orsToolError(w, newID(), msg)
		return
	}
	callID := newID()
	if err := s.sessions.startCall(sid, callID); err != nil {
		s.orsToolError(w, callID, err.Error())
		return
	}
	var output []byte
	defer func() { s.sessions.endCall(sid, output) }()
	if !s.takeSlot(w, r) {
		return
	}
	s.m.inflight.Add(1)
	defer func() { <-s.queue; s.m.inflight.Add(-1) }()
	output = s.orsScoreStreaming(w, r, sid, sess.lab, answer, callID)
}

// answerInput is the answer a call submits, or why the call is refused.
func answerInput(call orsToolCall) (answer, msg string) {
	if call.Name != orsToolAnswer {
		return "", fmt.Sprintf("name: no tool %q; this environment has one tool, %q", call.Name, orsToolAnswer)
	}
	raw, ok := call.Input["answer"]
	if !ok || json.Unmarshal(raw, &answer) != nil {
		return "", `input.answer: required, a string: the complete response to grade`
	}
	return answer, ""
}

// orsPingEvery is how often a call's stream sends a comment while the
// judge works: the SDK's client gives up on a stream silent for 30s.
const orsPingEvery = 10 * time.Second

// orsScoreStreaming scores answer as /v1/score scores an item with the
// problem's id, streaming pings until the output is in; it returns the
// output written (nil when the client went away or the judge failed under
// --on-judge-failure error, so that the session takes the answer again).
// The scoring goroutine is the handler's: it is cancelled and waited for
// before the handler returns.
func (s *Server) orsScoreStreaming(w http.ResponseWriter, r *http.Request, sid string, lab *schema.Label, answer, callID string) []byte {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	done := make(chan reward.Result, 1)
	wg.Go(func() {
		done <- s.scoreItems(ctx, []scoreItem{{requestID: sid, problemID: lab.ID, response: answer}})[0]
	})
	ev := newEventStream(w)
	if !ev.event("task_id", callID) {
		return nil
	}
	tick := time.NewTicker(orsPingEvery)
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			if r.Context().Err() != nil {
				// The client went away: the judging was cancelled with it,
				// so res may be a failed judgment, and nobody reads it.
				// select picks at random among ready cases, so this case
				// can win over the one below.
				return nil
			}
			if msg, failed := s.failedMessage([]reward.Result{res}); failed {
				ev.event("end", string(runToolError(msg)))
				return nil
			}
			out := runToolOutput(res)
			ev.event("end", string(out))
			return out
		case <-tick.C:
			if !ev.comment("ping") {
				return nil
			}
		case <-r.Context().Done():
			return nil
		}
	}
}

// runToolOutput is the RunToolOutput of a scored answer: a text block
// saying the reward, the reward, finished, and the /v1/score result as the
// metadata. The reward is the result's score, the scheme's reward mapped
// to [0, 1] with the lowest any answer can get at 0: an episode without a
// valid answer call gets no reward, which a trainer counts as 0, and so
// must earn no more than the worst answer (a scheme's own reward can be
// negative: srar's -0.9 for an honest wrong answer).
func runToolOutput(res reward.Result) []byte {
	text := fmt.Sprintf("Graded against the rubric: reward %.4f (the %s reward %.4f mapped to [0, 1]).", res.Score, res.Scheme, res.Reward)
	if res.Error != "" {
		text = "Not graded: " + res.Error
	}
	b, err := json.Marshal(map[string]any{"ok": true, "output": map[string]any{
		"blocks": []orsTextBlock{{"text", text}}, "metadata": res, "reward": res.Score, "finished": true,
	}})
	if err != nil { // a result always encodes (finite floats, reward.Finite)
		return runToolError("encoding the output: " + err.Error())
	}
	return b
}

func runToolError(msg string) []byte {
	b, _ := json.Marshal(map[string]any{"ok": false, "error": msg})
	return b
}

// orsToolError streams a refused call: its task_id, then a RunToolError.
func (s *Server) orsToolError(w http.ResponseWriter, callID, msg string) {
	ev := newEventStream(w)
	ev.event("task_id", callID)
	ev.event("end", string(runToolError(msg)))
}

// writeORSError answers an ORS request with an error as the SDK's server
// does ({"detail": ...}, read by its client) and as rewardd does
// ({"error": ...}).
func writeORSError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"detail": msg, "error": msg})
}

// eventStream writes server-sent events, flushing each.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, rc: http.NewResponseController(w)}
}

// event writes one event; data of several lines is sent as several data
// lines. It reports false once the client is gone.
func (e *eventStream) event(name, data string) bool {
	var b bytes.Buffer
	b.WriteString("event: " + name + "\n")
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return e.write(b.Bytes())
}

// comment writes a comment line, which keeps the stream alive.
func (e *eventStream) comment(text string) bool { return e.write([]byte(": " + text + "\n\n")) }

func (e *eventStream) write(b []byte) bool {
	if _, err := e.w.Write(b); err != nil {
		return false
	}
	return e.rc.Flush() == nil
}
