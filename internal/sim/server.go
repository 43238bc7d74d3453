package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// FaultKind names an injected failure; FaultNone is the empty string.
type FaultKind string

// Fault kinds.
const (
	FaultNone        FaultKind = ""
	FaultRateLimited FaultKind = "rate_limited"
	FaultServerError FaultKind = "server_error"
	FaultHang        FaultKind = "hang"
	FaultTruncate    FaultKind = "truncate"
	FaultMalformed   FaultKind = "malformed"
)

// Entry records one chat-completions request.
type Entry struct {
	Time   time.Time
	Kind   Kind
	Repair bool
	// Hash is the 64-bit hash of the canonical request (model, messages,
	// seed, n, sampling parameters).
	Hash uint64
	// Status is the HTTP status sent; 0 when none was (a hung request, or a
	// client that left during the latency wait).
	Status int
	Fault  FaultKind
	N      int
	// Attempt is what the fault was drawn from: the server-wide attempt
	// number, or with Config.FaultsByRequest this request's (1 for its first).
	Attempt uint64
	// OverLimit marks a request refused (429) by the server-side rate
	// limit (Config.LimitRPM, Config.LimitTPM), not by an injected fault.
	OverLimit bool
	// Tokens is what an admitted request was charged against the limit:
	// the prompt plus completion tokens its reply reports.
	Tokens int
	// Model and Usage are the request's model and its reply's usage: what
	// the provider bills when it answers 200 (see [Server.Bill]).
	Model string
	Usage Usage
}

// Server is the simulated endpoint; it is an http.Handler.
type Server struct {
	cfg       Config
	limit     *rateLimit
	attempts  atomic.Uint64
	seenMu    sync.Mutex
	seen      map[uint64]uint32 // attempts per request, with Config.FaultsByRequest
	count     atomic.Int64
	unknown   atomic.Int64 // rollout requests for problems not in Config.Answers
	mu        sync.Mutex
	log       []Entry
	statuses  map[int]int64 // requests by the status sent (0: none sent)
	closed    chan struct{}
	closeOnce sync.Once
	answers   answerCounts // 200 replies per request key, online and in batches
	bill      bill         // what the provider charged for (bill.go)
	batch     *batchAPI    // the simulated Files and Batch API (batch.go)
	prefix    *prefixCache // Config.PrefixCache; nil when off
}

// created is the fixed "created" time of every response.
const created = 1700000000

const (
	maxBodyBytes = 64 << 20
	maxChoices   = 256
)

// New returns a simulated endpoint with cfg's zero values defaulted.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	return &Server{cfg: cfg, limit: newRateLimit(cfg.LimitRPM, cfg.LimitTPM), closed: make(chan struct{}),
		statuses: make(map[int]int64), batch: newBatchAPI(cfg), prefix: newPrefixCache(cfg.PrefixCache)}
}

// Close ends hung and waiting requests (they get a 503) and makes new ones
// fail fast the same way; it stops running batches and removes the files
// of the Files and Batch API. It does not close any listener.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.batch.close()
	})
}

// Count is the number of chat-completions requests received over HTTP;
// batch rows are counted by [Server.BatchStats].
func (s *Server) Count() int64 { return s.count.Load() }

// UnknownProblems is the number of rollout requests for problems not in
// Config.Answers (their rollouts are always wrong).
func (s *Server) UnknownProblems() int64 { return s.unknown.Load() }

// Log returns a copy of the request log; it is empty unless Config.KeepLog.
func (s *Server) Log() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.log...)
}

// StatusCounts counts the chat-completions requests by the HTTP status
// sent; status 0 counts those that got none (hung, or the client left).
func (s *Server) StatusCounts() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.statuses)
}

func (s *Server) record(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[e.Status]++
	if e.Status == http.StatusOK {
		s.answers.note(e.Hash)
		s.bill.add(false, e.Model, e.Usage)
	}
	if s.cfg.KeepLog {
		e.Time = time.Now()
		s.log = append(s.log, e)
	}
}

// ServeHTTP answers POST /v1/chat/completions, GET /v1/models and the
// Files and Batch API (/v1/files, /v1/batches; see batch.go). Any other
// path gets the 404 vLLM gives ({"detail":"Not Found"}), so that a base
// URL without /v1 fails here as it would there; mount the server under a
// prefix with http.StripPrefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", nil, "use POST for chat completions")
			return
		}
		s.chat(w, r)
	case "/v1/models":
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
			return
		}
		writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{{
			ID: SimulatedModel, Object: "model", Created: created, OwnedBy: "rubricforge-llmtest (simulated)",
		}}})
	default:
		if !s.serveBatchAPI(w, r) {
			writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
		}
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.count.Add(1)
	attempt := s.attempts.Add(1)
	req, msgs, ok := s.readChat(w, r, attempt)
	if !ok {
		return
	}
	reqKey := requestKey(req, msgs)
	kind, prompt, repair := classify(msgs)
	entry := Entry{Kind: kind, Repair: repair, Hash: reqKey, N: req.n(), Attempt: attempt}
	if kind == KindUnknown {
		entry.Status = http.StatusBadRequest
		s.record(entry)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "unrecognized_prompt",
			"the simulated endpoint (rubricforge llmtest) does not recognize this prompt: it answers only the pipeline's own templates")
		return
	}
	if s.cfg.RefuseResponseFormat && req.jsonMode() {
		entry.Status = http.StatusBadRequest
		s.record(entry)
		writeLlamaError(w, "Failed to initialize samplers: Unexpected empty grammar stack after accepting piece: { (90)")
		return
	}
	if msg := s.overContext(req, msgs); msg != "" {
		entry.Status = http.StatusBadRequest
		s.record(entry)
		writeError(w, http.StatusBadRequest, "BadRequestError", nil, msg)
		return
	}
	draw := s.drawOf(reqKey, attempt)
	entry.Attempt = draw
	fault := s.fault(reqKey, draw)
	entry.Fault = fault
	resp := s.respond(req, msgs, kind, prompt, reqKey, entry.N, fault == FaultMalformed, draw)
	if s.prefix != nil {
		resp.Usage.Details = &promptDetails{CachedTokens: s.prefix.lookup(msgs)}
	}
	if s.cfg.Prompts != nil {
		cached := 0
		if resp.Usage.Details != nil {
			cached = resp.Usage.Details.CachedTokens
		}
		s.cfg.Prompts.RecordTokens(kind, msgs, resp.Usage.PromptTokens, cached)
	}
	entry.Model = req.Model
	entry.Usage = Usage{Responses: 1, PromptTokens: int64(resp.Usage.PromptTokens), CompletionTokens: int64(resp.Usage.CompletionTokens)}
	if !s.admit(w, &entry, resp.Usage.TotalTokens) {
		return
	}
	if fault != FaultNone {
		s.cfg.Logger.Debug("llmtest: injecting fault", "fault", string(fault), "kind", string(kind), "attempt", attempt)
	}
	s.answer(w, r, entry, resp, msgs)
}

// overContext says why a request does not fit Config.ContextTokens, in
// vLLM's words; "" when it fits.
func (s *Server) overContext(req *chatRequest, msgs []Message) string {
	if s.cfg.ContextTokens <= 0 {
		return ""
	}
	prompt := promptTokens(msgs)
	if need := int64(prompt) + req.maxTokens(); need > int64(s.cfg.ContextTokens) {
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.cfg.ContextTokens, need, prompt, req.maxTokens())
	}
	return ""
}

// promptTokens is a request's prompt tokens as its reply's usage counts them.
func promptTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += tokens(m.Content) + 4
	}
	return n
}

// readBody reads a request body into one buffer sized from its declared
// length (-1 when unknown; at most 1 MiB taken on trust) instead of
// io.ReadAll's series of regrowths and copies.
func readBody(r io.Reader, declared int64) ([]byte, error) {
	size := int64(0)
	if declared > 0 {
		size = min(declared, 1<<20)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// readChat reads and checks a chat-completions request; it answers a
// request it cannot take itself and returns false.
func (s *Server) readChat(w http.ResponseWriter, r *http.Request, attempt uint64) (*chatRequest, []Message, bool) {
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxBodyBytes), r.ContentLength)
	if err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		s.record(Entry{Kind: KindUnknown, Hash: key(0, string(body)), Status: status, Attempt: attempt})
		writeError(w, status, "invalid_request_error", nil, "reading the request body: "+err.Error())
		return nil, nil, false
	}
	req, msgs, reqKey, problem := parseChat(body)
	if problem != "" {
		s.reject(w, reqKey, attempt, problem)
		return nil, nil, false
	}
	return req, msgs, true
}

// parseChat decodes and checks a chat-completions body, online or a batch
// row's. When it cannot take the request it says why, with the request key
// known so far.
func parseChat(body []byte) (*chatRequest, []Message, uint64, string) {
	req, usual := scanChatRequest(body)
	if !usual {
		req = chatRequest{}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, nil, key(0, string(body)), "the request body is not valid JSON: " + err.Error()
		}
	}
	msgs, err := req.messages()
	if err != nil {
		return nil, nil, key(0, string(body)), "invalid request: " + err.Error()
	}
	reqKey := requestKey(&req, msgs)
	n := req.n()
	switch {
	case req.Stream:
		return nil, nil, reqKey, "the simulated endpoint (llmtest) does not support stream=true"
	case n < 1 || n > maxChoices:
		return nil, nil, reqKey, fmt.Sprintf("n must be between 1 and %d", maxChoices)
	case req.Model == "":
		return nil, nil, reqKey, "model is required"
	}
	return &req, msgs, reqKey, ""
}

// admit applies the server-side rate limit to a request whose reply
// uses tokens: over the limit, it answers 429 itself and returns false.
func (s *Server) admit(w http.ResponseWriter, entry *Entry, tokens int) bool {
	wait, ok := s.limit.admit(w.Header(), time.Now(), tokens)
	if ok {
		entry.Tokens = tokens
		return true
	}
	entry.Status, entry.OverLimit = http.StatusTooManyRequests, true
	s.record(*entry)
	secs := int64((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	w.Header().Set("Retry-After-Ms", strconv.FormatInt(max(1, wait.Milliseconds()), 10))
	writeError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
		fmt.Sprintf("simulated rate limit (llmtest): over the server's limit; retry in %v", wait.Round(time.Millisecond)))
	return false
}

// answer sends an admitted request's reply after its latency, or the
// fault drawn for it; a prompt answered joins the prefix cache.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, entry Entry, resp chatResponse, msgs []Message) {
	switch entry.Fault {
	case FaultRateLimited:
		entry.Status = http.StatusTooManyRequests
		s.record(entry)
		secs := int((s.cfg.Faults.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded",
			"simulated rate limit (llmtest): retry after "+strconv.Itoa(secs)+"s")
		return
	case FaultHang:
		s.record(entry)
		s.hang(w, r)
		return
	}
	if !s.wait(r.Context(), s.latency(entry.Hash, entry.Attempt)) {
		entry.Status = s.interrupted(w, r)
		s.record(entry)
		return
	}
	if entry.Fault == FaultServerError {
		entry.Status = http.StatusInternalServerError
		s.record(entry)
		writeError(w, http.StatusInternalServerError, "server_error", nil, "simulated internal server error (llmtest)")
		return
	}
	s.prefix.insert(msgs)
	out := resp.marshal()
	entry.Status = http.StatusOK
	s.record(entry)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	if entry.Fault == FaultTruncate {
		_, _ = w.Write(out[:len(out)/2])
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // drops the connection without a log line
	}
	_, _ = w.Write(out)
}

// reject answers a request the simulator cannot parse.
func (s *Server) reject(w http.ResponseWriter, reqKey, attempt uint64, msg string) {
	s.record(Entry{Kind: KindUnknown, Hash: reqKey, Status: http.StatusBadRequest, Attempt: attempt})
	writeError(w, http.StatusBadRequest, "invalid_request_error", nil, msg)
}

// maxSeen bounds the per-request attempt counts of Config.FaultsByRequest.
const maxSeen = 1 << 20

// drawOf is what an attempt's fault and latency are drawn from: the
// server-wide attempt number, or with Config.FaultsByRequest the number of
// times this request has come (1 for the first).
func (s *Server) drawOf(reqKey, attempt uint64) uint64 {
	if !s.cfg.FaultsByRequest {
		return attempt
	}
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if s.seen == nil || len(s.seen) >= maxSeen {
		s.seen = make(map[uint64]uint32)
	}
	s.seen[reqKey]++
	return uint64(s.seen[reqKey])
}

// fault draws this attempt's fault.
func (s *Server) fault(reqKey, attempt uint64) FaultKind {
	f := s.cfg.Faults
	if f.Total() == 0 {
		return FaultNone
	}
	u := unit(newKeyer(s.cfg.Seed).str("fault").u64(reqKey).u64(attempt).sum())
	for _, c := range []struct {
		kind FaultKind
		rate float64
	}{
		{FaultRateLimited, f.RateLimited}, {FaultServerError, f.ServerError}, {FaultHang, f.Hang},
		{FaultTruncate, f.Truncate}, {FaultMalformed, f.Malformed},
	} {
		if u < c.rate {
			return c.kind
		}
		u -= c.rate
	}
	return FaultNone
}

// latency draws this attempt's delay, uniform in [0.5, 1.5] x Config.Latency.
func (s *Server) latency(reqKey, attempt uint64) time.Duration {
	if s.cfg.Latency <= 0 {
		return 0
	}
	u := unit(newKeyer(s.cfg.Seed).str("latency").u64(reqKey).u64(attempt).sum())
	return time.Duration(float64(s.cfg.Latency) * (0.5 + u))
}

// wait sleeps for d unless ctx ends or the server closes first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-s.closed:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.closed:
	}
	return false
}

// hang holds a request until the client gives up, the server closes, or
// HangMax passes; then the connection is dropped.
func (s *Server) hang(w http.ResponseWriter, r *http.Request) {
	if s.wait(r.Context(), s.cfg.Faults.HangMax) {
		panic(http.ErrAbortHandler)
	}
	_ = s.interrupted(w, r)
}

// interrupted ends a request whose wait was cut short: nothing to say to a
// client that left (status 0); a 503 when the server is closing.
func (s *Server) interrupted(w http.ResponseWriter, r *http.Request) int {
	if r.Context().Err() != nil {
		return 0
	}
	writeError(w, http.StatusServiceUnavailable, "server_error", nil, "the simulated endpoint (llmtest) is shutting down")
	return http.StatusServiceUnavailable
}

// respond builds the completion for a recognized prompt.
func (s *Server) respond(req *chatRequest, msgs []Message, kind Kind, prompt string, reqKey uint64, n int, malformed bool, attempt uint64) chatResponse {
	resp := chatResponse{
		ID:                fmt.Sprintf("chatcmpl-sim-%016x", reqKey),
		Object:            "chat.completion",
		Created:           created,
		Model:             req.Model,
		SystemFingerprint: "simulated-llmtest",
		Choices:           make([]choice, 0, n),
	}
	badIndex := -1
	if malformed {
		badIndex = int(attempt % uint64(n))
	}
	var problem, gold, sampleBase string
	if kind == KindRollout || kind == KindRefineGuided {
		problem, _ = between(prompt, "<problem>", "</problem>")
		gold = s.goldFor(problem)
		if req.Seed != nil {
			sampleBase = "seed:" + strconv.FormatInt(*req.Seed, 10)
		} else {
			sampleBase = fmt.Sprintf("request:%016x", reqKey)
		}
	}
	limit := req.maxTokens()
	jsonMode := req.jsonMode()
	for i := range n {
		bad := i == badIndex
		r := newRNG(newKeyer(s.cfg.Seed).str("choice").u64(reqKey).u64(uint64(i)).sum())
		msg := responseMessage{Role: "assistant"}
		finish := "stop"
		switch kind {
		case KindRollout:
			sol := s.rolloutAt(problem, gold, sampleBase+"/"+strconv.Itoa(i), bad, s.correctRate(req.Model, problem))
			msg.Content, msg.Reasoning, finish = sol.content, sol.reasoning, sol.finish
		case KindRefineGuided:
			sol := s.refineGuided(req.Model, prompt, sampleBase+"/"+strconv.Itoa(i), bad)
			msg.Content, msg.Reasoning, finish = sol.content, sol.reasoning, sol.finish
		case KindRubricator:
			msg.Content = s.rubricator(req.Model, prompt, r, bad)
		case KindElicit:
			msg.Content = s.elicit(prompt, r, bad)
		case KindDistillSRaR:
			msg.Content = s.srarRubric(prompt, r, bad)
		case KindDistillFactualProcess:
			msg.Content = s.factualProcessRubric(prompt, r, bad, jsonMode)
		case KindJudgeItem:
			msg.Content = s.judgeItem(req.Model, prompt, r, bad, jsonMode)
		case KindJudgeBatch:
			msg.Content = s.judgeBatch(req.Model, prompt, r, bad, jsonMode)
		case KindSatisfy:
			msg.Content = s.satisfy(req.Model, prompt, samplingKey(req, msgs), r, bad, jsonMode)
		case KindSatisfyGroup:
			msg.Content = s.satisfyGroup(req.Model, prompt, samplingKey(req, msgs), r, bad)
		case KindScoreGrounded:
			msg.Content = s.scoreGrounded(req.Model, prompt, r, bad, jsonMode)
		case KindScoreGroundedGroup:
			msg.Content = s.scoreGroundedGroup(req.Model, prompt, r, bad)
		case KindGroundedAnalyze:
			msg.Content = s.groundedAnalyze(prompt, r, bad, jsonMode)
		case KindGroundedSynthesize:
			msg.Content = s.groundedSynthesize(prompt, r, bad, jsonMode)
		case KindGroundedEnrich:
			msg.Content = s.groundedEnrich(prompt, r, bad, jsonMode)
		case KindGroundedJudgeBatch:
			msg.Content = s.groundedJudgeBatch(req.Model, prompt, r, bad, jsonMode)
		case KindGroundedJudgeItem:
			msg.Content = s.groundedJudgeItem(req.Model, prompt, r, bad, jsonMode)
		case KindGroundedAnswer:
			msg.Content = s.groundedAnswer(prompt, r)
		case KindDecompose:
			msg.Content = s.decompose(prompt, r, bad)
		case KindGroundedAnswerOpen:
			msg.Content = s.groundedAnswerOpen(prompt, r)
		}
		if limit > 0 && int64(tokens(msg.Content)) > limit {
			cut := int(min(limit*4, int64(len(msg.Content))))
			for cut > 0 && !utf8Start(msg.Content[cut]) {
				cut--
			}
			msg.Content, finish = msg.Content[:cut], "length"
		}
		resp.Choices = append(resp.Choices, choice{Index: i, Message: msg, FinishReason: finish})
		resp.Usage.CompletionTokens += tokens(msg.Content)
	}
	if n > 1 && unit(key(s.cfg.Seed, "order", strconv.FormatUint(reqKey, 16))) < 0.25 {
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			resp.Choices[i], resp.Choices[j] = resp.Choices[j], resp.Choices[i]
		}
	}
	resp.Usage.PromptTokens = promptTokens(msgs)
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	return resp
}

// goldFor looks a rollout's problem up in Config.Answers. The first
// problem not there is reported once; the rest are only counted.
func (s *Server) goldFor(problem string) string {
	gold, ok := s.cfg.Answers[problem]
	if !ok && s.unknown.Add(1) == 1 {
		s.cfg.Logger.Warn("llmtest: a problem is not in the answers file (-problems), so its rollouts are always wrong; further ones are only counted",
			"problem", excerpt(problem, 80), "answers", len(s.cfg.Answers))
	}
	return gold
}

// excerpt cuts s to at most n bytes on a rune boundary.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Serve answers on ln until ctx ends, then closes s (cutting hung and
// waiting requests short) and shuts the HTTP server down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("llmtest: serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.Close()
	// Handlers return at once after Close, so a short grace period is
	// enough; it also bounds the wait for connections that never sent a
	// request, which Shutdown would otherwise hold for 5s.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 250*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("llmtest: shutting down: %w", err)
	}
	return nil
}

// Start serves a new Server on 127.0.0.1 at a free port. It returns the
// base URL including /v1 and a function that stops the server and waits for
// it.
func Start(cfg Config) (*Server, string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("llmtest: listening on 127.0.0.1: %w", err)
	}
	s := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Serve(ctx, ln); err != nil {
			s.cfg.Logger.Warn("llmtest: server stopped", "err", err)
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	return s, "http://" + ln.Addr().String() + "/v1", stop, nil
}
