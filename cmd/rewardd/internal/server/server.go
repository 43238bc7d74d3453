package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// The paths rewardd serves.
const (
	pathGetReward    = "/get_reward"
	pathScore        = "/score"
	pathV1Score      = "/v1/score"
	pathV1ScoreGroup = "/v1/score_group"
	// The training-time loops' endpoints (loops*.go).
	pathRubricatorPrompt = "/v1/rubricator_prompt"
	pathRubricStats      = "/v1/rubric_stats"
	pathHealthz          = "/healthz"
	pathMetrics          = "/metrics"
	pathOther            = "other"
)

// Config configures a Server.
type Config struct {
	// Index finds rubrics by problem id or text; nil when rewardd runs
	// without a corpus and every request carries its label.
	Index *Index
	Judge *judge.Judge // the satisfaction judge; required
	Meter *llm.Meter   // the judge client's meter, for /metrics; may be nil
	// Params are the formulas' constants (DefaultParams when zero).
	Params reward.Params
	// Scheme, when set, is the default scheme of every request that names
	// none, before the label's own.
	Scheme string
	// MaxBodyBytes bounds a request body (default 64 MiB: OpenRLHF 0.9
	// posts a whole rollout in one request, 1,024 samples of 8K-token
	// responses are 36 MB).
	MaxBodyBytes int64
	// MaxInflightBytes bounds the bytes of the request bodies held at once
	// (default 512 MiB, at least MaxBodyBytes): a request reserves room as
	// its body's bytes arrive (its buffer doubles, up to its
	// Content-Length) and waits, up to QueueWait, while others hold the
	// room; a body sent slowly holds only what it has sent.
	MaxInflightBytes int64
	// MaxQueue bounds the scoring requests being scored at once (default
	// 4096); a request whose body is read waits up to QueueWait for a slot.
	MaxQueue int
	// QueueWait bounds how long a request waits for room (its body's bytes,
	// then a slot) before it gets 503 with Retry-After (default 60s).
	QueueWait time.Duration
	// Timeout bounds the judging of one request (default 100s, under the
	// trainers' client timeouts: slime 120s, OpenRLHF 180s); a verdict not
	// in by then is a judge failure.
	Timeout time.Duration
	// StallAfter is how long judge calls may be outstanding with none
	// finishing before they count as failed judgments in /healthz and
	// /metrics (default 20s): a hung judge shows long before Timeout.
	StallAfter time.Duration
	// OnJudgeFailure is what a response whose judgment failed is paid:
	// OnJudgeFailureFloor (the default), OnJudgeFailureOutcome or
	// OnJudgeFailureError.
	OnJudgeFailure string
	// Breaker tunes the circuit breaker in front of the judge, and each
	// panel judge's own.
	Breaker BreakerOptions
	// AllAtOnce sends every judge request of a group (the responses of one
	// rubric in a request) at once. By default the first is sent alone and
	// the others once it is answered (or has taken StallAfter), so that a
	// judge server's prefix cache computes what they share once.
	AllAtOnce bool
	// Group judges the responses of one rubric in a request (a group: a
	// math rubric's, or a grounded question's) in one judge request, or in
	// parts that fit the judge's response budget together
	// (judge.Judge.GroupVerdicts, GroundedGroupScores), instead of one
	// each; off by default (docs/judge-reliability.md).
	Group bool
	// PanelMemberDeadline bounds, with a panel of judges, how long the
	// panel waits for a judge once another has answered (0: no bound but
	// Timeout): one not in by then is cut off, counted as failed (a vote
	// against the response) and as an outage by its own breaker.
	PanelMemberDeadline time.Duration
	// Token, when set, must come as "Authorization: Bearer TOKEN" on every
	// request except GET /healthz.
	Token string
	// ORS tunes the Open Reward Standard environment a corpus is served
	// as (ors.go); it is served when Index is set.
	ORS ORSOptions
	// Live keeps the problems' live rubrics (--state-dir; livestate.go);
	// nil: the rubric does not move. SplitState is what a group of a
	// problem another replica keeps gets: SplitStateRefuse (409, the
	// default) or SplitStateWarn (scored with the corpus's rubric,
	// unrecorded, a warning logged).
	Live       *livestate.Store
	SplitState string
	// Elicit, when set (--elicit; needs Live), elicits new criteria for the
	// live rubrics (elicit.go).
	Elicit *ElicitOptions
	// Prompts holds the rollout template of the ORS prompts (nil: the
	// embedded templates).
	Prompts *prompts.Set
	Logger  *slog.Logger
}

// Server is rewardd's HTTP handler.
type Server struct {
	cfg       Config
	log       *slog.Logger
	m         *serverMetrics
	queue     chan struct{}
	bodies    *byteBudget
	breaker   *breaker
	tokenHash [sha256.Size]byte
	itemErrs  atomic.Int64
	fallbacks atomic.Int64   // items whose label did not parse, scored by the corpus's rubric
	calls     callWatch      // the judge calls outstanding, to see a hung judge
	members   []*memberGuard // a panel's judges' own breakers and records
	// judgeFails counts the failed judgments; failLog rate-limits the
	// lines that say so.
	judgeFails atomic.Int64
	failLog    everyLog
	sessions   *orsSessions // the ORS sessions
	// live holds the problems' live rubrics (--state-dir); nil when the
	// rubric does not move.
	live *liveState
	// elicit runs elicitations (Config.Elicit); nil when off.
	elicit *elicitor
	// bufs holds *bytes.Buffer for request bodies and answers, so that a
	// request's large buffers are not garbage the next ones pay for.
	bufs sync.Pool
	// waitHook, set by tests before requests come, is called when a
	// request starts waiting for a scoring slot.
	waitHook func()
}

// New checks cfg and returns the handler.
func New(cfg Config) (*Server, error) {
	if cfg.Judge == nil {
		return nil, errors.New("reward: the server needs a judge")
	}
	if cfg.Params == (reward.Params{}) {
		cfg.Params = reward.DefaultParams()
	}
	if err := cfg.Params.Check(); err != nil {
		return nil, fmt.Errorf("reward: %w", err)
	}
	if err := checkScheme(cfg.Scheme, "scheme"); err != nil {
		return nil, fmt.Errorf("reward: %w", err)
	}
	if err := reward.CheckJudgeFailurePolicy(cfg.OnJudgeFailure); err != nil {
		return nil, fmt.Errorf("reward: %w", err)
	}
	if cfg.OnJudgeFailure == "" {
		cfg.OnJudgeFailure = reward.OnJudgeFailureFloor
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 64 << 20
	}
	if cfg.MaxInflightBytes <= 0 {
		cfg.MaxInflightBytes = 512 << 20
	}
	cfg.MaxInflightBytes = max(cfg.MaxInflightBytes, cfg.MaxBodyBytes)
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 4096
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = time.Minute
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 100 * time.Second
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = 20 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Prompts == nil {
		ps, err := prompts.Load("")
		if err != nil {
			return nil, fmt.Errorf("reward: loading the embedded templates: %w", err)
		}
		cfg.Prompts = ps
	}
	switch cfg.SplitState {
	case "":
		cfg.SplitState = SplitStateRefuse
	case SplitStateRefuse, SplitStateWarn:
	default:
		return nil, fmt.Errorf("reward: split state %q is not %s or %s", cfg.SplitState, SplitStateRefuse, SplitStateWarn)
	}
	cfg.ORS.setDefaults()
	s := &Server{sessions: newORSSessions(cfg.ORS), cfg: cfg, log: cfg.Logger, m: newServerMetrics(), queue: make(chan struct{}, cfg.MaxQueue),
		bodies: newByteBudget(cfg.MaxInflightBytes), breaker: newBreaker(cfg.Breaker)}
	if cfg.Token != "" {
		s.tokenHash = sha256.Sum256([]byte(cfg.Token))
	}
	s.members = guardMembers(cfg.Judge, cfg.Breaker, cfg.PanelMemberDeadline)
	if cfg.Live != nil {
		s.live = &liveState{}
	}
	if cfg.Elicit != nil {
		if cfg.Live == nil || cfg.Elicit.Meter == nil || cfg.Elicit.Model == "" {
			return nil, errors.New("reward: elicitation needs a live state, a meter and a model")
		}
		s.elicit = newElicitor(*cfg.Elicit)
	}
	return s, nil
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController flush the event streams.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// ServeHTTP routes a request, counting it by endpoint and status.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	endpoint := endpointOf(r.URL.Path)
	var ors orsOp
	if endpoint == pathOther {
		if op, ok := s.orsRoute(r.URL.Path); ok {
			ors, endpoint = op, op.label
		}
	}
	defer func() { s.m.request(endpoint, sw.code, time.Since(start).Seconds()) }()
	if endpoint != pathHealthz && ors.name != "health" && !s.authorized(r) {
		sw.Header().Set("WWW-Authenticate", `Bearer realm="rewardd"`)
		writeError(sw, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer ...)")
		return
	}
	method := cmp.Or(ors.method, http.MethodPost)
	if endpoint == pathHealthz || endpoint == pathMetrics || endpoint == pathRubricStats {
		method = http.MethodGet
	}
	switch {
	case endpoint == pathOther:
		writeError(sw, http.StatusNotFound, fmt.Sprintf("no endpoint %s; rewardd serves POST %s, %s, %s, %s, %s, %s and GET %s, %s, %s, and with --corpus the Open Reward Standard environment /%s/... (GET /list_environments)",
			r.URL.Path, pathGetReward, pathScore, pathV1Score, pathV1ScoreGroup, pathRubricatorPrompt, pathVerify, pathHealthz, pathMetrics, pathRubricStats, s.cfg.ORS.Env))
		return
	case r.Method != method:
		sw.Header().Set("Allow", method)
		writeError(sw, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s", endpoint, method))
		return
	}
	if ors.name != "" {
		s.serveORS(sw, r, ors)
		return
	}
	switch endpoint {
	case pathHealthz:
		s.healthz(sw, r.URL.Query().Get("strict") == "1")
	case pathMetrics:
		sw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		sw.WriteHeader(http.StatusOK)
		s.m.write(sw, s.records(), s.cfg.Judge, s.cfg.Meter, s.breaker.status(), s.judgeHealth(time.Now()))
		s.writeBodyMetrics(sw)
		s.writeMemberMetrics(sw)
		s.writeLiveMetrics(sw)
	case pathRubricStats:
		s.rubricStats(sw, r)
	default:
		s.scoring(sw, r, endpoint)
	}
}

// writeBodyMetrics writes the request bodies being read, the bytes of
// --max-inflight-bytes held and the ORS sessions held.
func (s *Server) writeBodyMetrics(w io.Writer) {
	help(w, "rewardd_request_bodies_reading", "gauge", "Requests whose body is being read.")
	fmt.Fprintf(w, "rewardd_request_bodies_reading %d\n", s.m.bodiesReading.Load())
	help(w, "rewardd_request_body_bytes", "gauge", "Bytes of --max-inflight-bytes held by the request bodies read or being read.")
	fmt.Fprintf(w, "rewardd_request_body_bytes %d\n", s.cfg.MaxInflightBytes-s.bodies.available())
	help(w, "rewardd_ors_sessions", "gauge", "Open Reward Standard sessions held (at most --ors-max-sessions).")
	fmt.Fprintf(w, "rewardd_ors_sessions %d\n", s.sessions.len())
}

func endpointOf(path string) string {
	switch path {
	case pathGetReward, pathScore, pathV1Score, pathV1ScoreGroup, pathVerify, pathHealthz, pathMetrics, pathRubricatorPrompt, pathRubricStats:
		return path
	}
	return pathOther
}

func (s *Server) records() int {
	if s.cfg.Index == nil {
		return 0
	}
	return s.cfg.Index.Len()
}

// authorized compares the bearer token in constant time (of hashes, so
// neither the length nor the content leaks).
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	got, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		got = r.Header.Get("X-API-Key") // how the ORS clients send it
	}
	if got == "" {
		return false
	}
	h := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(h[:], s.tokenHash[:]) == 1
}

// bearerToken is the token of an "Authorization: Bearer TOKEN" header; the
// scheme's name is case-insensitive (RFC 9110, section 11.1: "bearer" and
// "BEARER" are "Bearer").
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// scoring admits a scoring request: it reserves room for the body's bytes,
// reads the body, takes a scoring slot (waiting up to QueueWait for each),
// and hands the body to the endpoint's handler under the judge timeout,
// which starts once the body is in.
func (s *Server) scoring(w http.ResponseWriter, r *http.Request, endpoint string) {
	body, release, ok := s.readBody(w, r)
	if !ok {
		return
	}
	defer release()
	if !s.takeSlot(w, r) {
		return
	}
	s.m.inflight.Add(1)
	defer func() { <-s.queue; s.m.inflight.Add(-1) }()

	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	q := r.URL.Query()
	scheme := q.Get("scheme")
	if err := checkScheme(scheme, "the scheme URL parameter"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch endpoint {
	case pathGetReward:
		s.getReward(ctx, w, body, scheme)
	case pathScore:
		s.slimeScore(ctx, w, body, scheme, q.Get("bare") == "1")
	case pathV1Score:
		s.v1Score(ctx, w, body)
	case pathV1ScoreGroup:
		s.v1ScoreGroup(ctx, w, body)
	case pathVerify:
		s.nemoVerify(ctx, w, body, scheme)
	case pathRubricatorPrompt:
		s.rubricatorPrompt(w, body)
	}
}

func (s *Server) v1Score(ctx context.Context, w http.ResponseWriter, body []byte) {
	items, err := decodeScore(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	results := s.scoreItems(ctx, items)
	if s.refuseFailed(w, results) {
		return
	}
	s.answer(w, map[string]any{"results": results})
}

// getReward answers OpenRLHF's remote reward protocol: rewards, scores in
// [0, 1] and extra_logs with the same keys for every sample.
func (s *Server) getReward(ctx context.Context, w http.ResponseWriter, body []byte, scheme string) {
	items, err := decodeGetReward(body, scheme)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	results := s.scoreItems(ctx, items)
	if s.refuseFailed(w, results) {
		return
	}
	rewards := make([]float64, len(results))
	scores := make([]float64, len(results))
	logs := make(map[string][]float64, len(extraLogKeys))
	for _, k := range extraLogKeys {
		logs[k] = make([]float64, len(results))
	}
	judged, failed := judgeFailures(results)
	rate := 0.0
	if judged > 0 {
		rate = float64(failed) / float64(judged)
	}
	for i, r := range results {
		rewards[i], scores[i] = r.Reward, r.Score
		for _, k := range extraLogKeys {
			logs[k][i] = extraLog(r, k)
		}
		logs[extraLogFailureRate][i] = rate
	}
	s.logRubricVersions(logs, results)
	s.answer(w, map[string]any{"rewards": rewards, "scores": scores, "extra_logs": logs})
}

// extraLogKeys are the extra_logs of /get_reward: the components of every
// scheme (0 when a scheme has no such component) and the main metrics.
var extraLogKeys = []string{
	"reward/accuracy", "reward/format", "reward/suggest", "reward/pitfall", "reward/bonus", "reward/rubric",
	"reward/outcome", "reward/cot",
	"rubric/judge_ok", "rubric/correct", "rubric/pass_rate", "rubric/n_items", "rubric/satisfied", "rubric/n_steps",
	"rubric/error", extraLogFailureRate,
}

// extraLogFailureRate is the extra_logs key of the batch's judge-failure
// rate: the fraction of its judged samples whose judgment failed, the same
// value for every sample of the batch (so its mean over a rollout is the
// rollout's rate, whatever the batch sizes).
const extraLogFailureRate = "rubric/judge_failure_rate"

func extraLog(r reward.Result, key string) float64 {
	switch key {
	case "rubric/judge_ok":
		return b2f(r.JudgeOK)
	case "rubric/correct":
		return b2f(r.Correct)
	case "rubric/error":
		return b2f(r.Error != "")
	case extraLogFailureRate:
		return 0 // a figure of the batch, filled in by getReward
	}
	if c, ok := strings.CutPrefix(key, "reward/"); ok {
		return r.Components[c]
	}
	return r.Metrics[strings.TrimPrefix(key, "rubric/")]
}

// slimeScore answers slime's remote_rm: the result object (use
// --reward-key reward), or with ?bare=1 the reward as a bare JSON number;
// an item that cannot be scored (no rubric found, a bad label) is then a
// 422 naming why, never a bare 0 that looks like a judged reward.
func (s *Server) slimeScore(ctx context.Context, w http.ResponseWriter, body []byte, scheme string, bare bool) {
	item, err := decodeSlime(body, scheme)
	res, ok := s.scoreSingle(ctx, w, item, err)
	if !ok {
		return
	}
	if bare {
		if res.Error != "" { // a bare number cannot say the item was not scored
			writeError(w, http.StatusUnprocessableEntity, res.Error)
			return
		}
		s.answer(w, res.Reward)
		return
	}
	s.answer(w, res)
}

// scoreSingle scores the one item a request decoded to (err: why it did
// not decode, a 400); ok is false when it answered the request itself (the
// 400, or a 503 for a failed judgment under --on-judge-failure error).
func (s *Server) scoreSingle(ctx context.Context, w http.ResponseWriter, item scoreItem, err error) (res reward.Result, ok bool) {
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return res, false
	}
	results := s.scoreItems(ctx, []scoreItem{item})
	if s.refuseFailed(w, results) {
		return res, false
	}
	return results[0], true
}

// v1ScoreGroup scores a group in the memory of a pooled scratch, put back
// once the answer is written: nothing keeps a response, a rollout or a
// result past the request (the judge keeps a response's hash and the
// prompts it renders, the metrics count results).
func (s *Server) v1ScoreGroup(ctx context.Context, w http.ResponseWriter, body []byte) {
	sc := getGroupScratch()
	defer putGroupScratch(sc)
	problem, responses, err := decodeGroup(body, sc)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	lab, msg := s.resolve(&problem)
	if lab == nil && problem.badLabel != nil {
		writeError(w, http.StatusBadRequest, msg) // a malformed label and no rubric to stand in for it
		return
	}
	if lab != nil && lab.Grounded != nil {
		if problem.loops != nil {
			writeError(w, http.StatusBadRequest, "proposals, proposals_mode, guide and off_policy apply to math rubrics; this problem is a grounded question")
			return
		}
		s.groundedGroup(ctx, w, &problem, lab, responses)
		return
	}
	scheme := s.scheme(problem.scheme, lab)
	if lab == nil {
		g := reward.Group{Results: make([]reward.Result, len(responses)), Advantages: make([]reward.Advantage, len(responses)), Validity: []reward.ItemGroupValidity{}}
		for i := range responses {
			g.Results[i] = reward.ErrorResult(problem.requestID, problem.problemID, scheme, msg)
			g.Advantages[i].Steps = []reward.StepAdvantage{}
		}
		s.noteErrors(g.Results)
		s.answerGroup(w, groupJSON{Group: g, Error: msg})
		return
	}
	if problem.loops != nil || s.live != nil {
		s.loopGroup(ctx, w, &problem, lab, scheme, responses, sc)
		return
	}
	rs := sc.rollouts.Take(len(responses))
	labs := sc.labels.Take(len(responses))
	for i, text := range responses {
		steps := sc.spans.Extend(func(b []reward.StepSpan) []reward.StepSpan { return reward.AppendSteps(b, text) })
		rs[i], labs[i] = reward.AnalyzeStepsFinished(text, lab.GroundTruth, problem.finishOf(i), steps), lab
	}
	s.judgeAll(ctx, labs, rs)
	g := reward.ScoreGroupIn(s.cfg.Params, s.cfg.OnJudgeFailure, scheme, lab, rs, &sc.mem)
	for i := range g.Results {
		g.Results[i].RequestID, g.Results[i].Note = problem.requestID, problem.note
	}
	s.account(g.Results)
	if s.refuseFailed(w, g.Results) {
		return
	}
	s.answerGroup(w, groupJSON{Group: g})
}

// groupJSON is the body of a /v1/score_group answer.
type groupJSON struct {
	reward.Group
	// Rubricator pays the request's proposals, one result each; Guidance is
	// RGR's exploration assessment, when the request asked for it.
	Rubricator []reward.RubricatorResult `json:"rubricator,omitempty"`
	Guidance   *guidanceJSON             `json:"guidance,omitempty"`
	Error      string                    `json:"error,omitempty"`
}

// readBody reads a request body within the byte budget. The body's buffer
// grows as its bytes arrive (doubling, at most to the declared
// Content-Length), and each growth reserves its bytes first, waiting for
// room up to QueueWait in all: a request holds the room its received bytes
// take, never what it declares, so connections that declare large bodies
// and send them slowly do not starve the others. It answers the request
// itself and reports false when the body is too large, the budget stays
// full past QueueWait, or the read fails; release gives the body's bytes
// back.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	s.m.bodiesReading.Add(1)
	defer s.m.bodiesReading.Add(-1)
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(r.ContentLength, limit))
		return nil, nil, false
	}
	wait, cancel := context.WithTimeout(r.Context(), s.cfg.QueueWait)
	defer cancel()
	b := bodyBuffer{budget: s.bodies, buf: s.buffer().AvailableBuffer()}
	release = func() {
		if b.buf != nil {
			s.release(bytes.NewBuffer(b.buf[:0]))
		}
		b.free()
	}
	err := b.readFrom(wait, http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err == nil {
		body = b.buf
		if cap(body) > maxPooledBuffer {
			// The decoders copy what they keep, so a large body is garbage
			// once decoded; the reservation stays for the decoded copy.
			b.buf = nil
		}
		return body, release, true
	}
	release()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(-1, tooBig.Limit))
	case errors.Is(err, errNoRoom):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("rewardd is busy: the request bodies in progress fill --max-inflight-bytes %d and none was done within --queue-wait %s; retry", s.cfg.MaxInflightBytes, s.cfg.QueueWait))
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the request body: %v", err))
	}
	return nil, nil, false
}

// errNoRoom is a body that found no room in the byte budget within the
// queue wait.
var errNoRoom = errors.New("no room for the request body")

// bodyStep is the least a body's buffer grows by.
const bodyStep = 64 << 10

// bodyBuffer is a request body read into a buffer whose capacity is
// reserved in a byte budget before it is allocated.
type bodyBuffer struct {
	budget   *byteBudget
	buf      []byte
	reserved int64 // reserved for buf's capacity (0 for a pooled buffer's)
}

// readFrom reads src to its end, growing buf as bytes arrive: to twice its
// capacity, at least bodyStep more, at most size (the declared length; -1
// for unknown, then limit+1, room to see a body over the limit). ctx
// bounds the waits for room.
func (b *bodyBuffer) readFrom(ctx context.Context, src io.Reader, size, limit int64) error {
	ceiling := limit + 1
	if size >= 0 {
		ceiling = size
	}
	for int64(len(b.buf)) < ceiling {
		if len(b.buf) == cap(b.buf) {
			if err := b.grow(ctx, min(max(2*int64(cap(b.buf)), int64(len(b.buf))+bodyStep), ceiling)); err != nil {
				return err
			}
		}
		n, err := src.Read(b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+n]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// grow moves buf to an array of capacity c, whose bytes beyond the old
// array's are reserved first (the old array is garbage once copied; so a
// body of --max-body alone always fits the budget).
func (b *bodyBuffer) grow(ctx context.Context, c int64) error {
	if err := b.budget.acquire(ctx, c-b.reserved); err != nil {
		return fmt.Errorf("%w: %w", errNoRoom, err)
	}
	nb := make([]byte, len(b.buf), c)
	copy(nb, b.buf)
	b.buf, b.reserved = nb, c
	return nil
}

// free gives the reservation back.
func (b *bodyBuffer) free() {
	b.budget.release(b.reserved)
	b.reserved = 0
}

func tooLarge(size, limit int64) string {
	what := "the request body is larger than"
	if size >= 0 {
		what = fmt.Sprintf("the request body of %d bytes is larger than", size)
	}
	return fmt.Sprintf("%s the %d allowed (--max-body); raise --max-body (and --max-inflight-bytes) or send smaller batches", what, limit)
}

// takeSlot takes a scoring slot, waiting up to QueueWait; it answers 503
// itself and reports false when none came free.
func (s *Server) takeSlot(w http.ResponseWriter, r *http.Request) bool {
	select {
	case s.queue <- struct{}{}:
		return true
	default:
	}
	if s.waitHook != nil {
		s.waitHook()
	}
	t := time.NewTimer(s.cfg.QueueWait)
	defer t.Stop()
	select {
	case s.queue <- struct{}{}:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("rewardd is busy: %d requests in progress (--max-queue) and none was done within --queue-wait %s; retry", cap(s.queue), s.cfg.QueueWait))
	return false
}

// refuseFailed answers 503 with Retry-After, and reports true, when the
// policy is OnJudgeFailureError and a judgment of results failed.
func (s *Server) refuseFailed(w http.ResponseWriter, results []reward.Result) bool {
	msg, failed := s.failedMessage(results)
	if !failed {
		return false
	}
	w.Header().Set("Retry-After", "2")
	writeError(w, http.StatusServiceUnavailable, msg)
	return true
}

// scoreItems scores items independently.
func (s *Server) scoreItems(ctx context.Context, items []scoreItem) []reward.Result {
	out := make([]reward.Result, len(items))
	labs := make([]*schema.Label, len(items))
	schemes := make([]string, len(items))
	rs := make([]reward.Rollout, len(items))
	glabs := make([]*schema.Label, len(items)) // grounded questions, scored by scoreGroundedItems
	versions := make([]int64, len(items))      // the live rubric's version each is scored with
	for i := range items {
		it := &items[i]
		if it.err != "" {
			out[i] = reward.ErrorResult(it.requestID, it.problemID, s.scheme(it.scheme, nil), it.err)
			continue
		}
		lab, msg := s.resolve(it)
		var version int64
		if lab != nil {
			lab, version = s.liveLabel(lab)
		}
		versions[i] = version
		schemes[i] = s.scheme(it.scheme, lab)
		if lab == nil {
			out[i] = reward.ErrorResult(it.requestID, it.problemID, s.errorScheme(it), msg)
			continue
		}
		if it.unjudged != "" {
			out[i] = unjudgedResult(s.cfg.Params, schemes[i], lab, it)
			continue
		}
		if lab.Grounded != nil {
			glabs[i] = lab
			continue
		}
		labs[i], rs[i] = lab, reward.AnalyzeFinished(it.response, lab.GroundTruth, it.finish)
	}
	s.judgeAll(ctx, labs, rs)
	for i := range items {
		if labs[i] != nil {
			out[i] = reward.ScoreWith(s.cfg.Params, s.cfg.OnJudgeFailure, schemes[i], labs[i], &rs[i], nil)
			out[i].RequestID, out[i].RubricVersion = items[i].requestID, versions[i]
		}
	}
	s.scoreGroundedItems(ctx, items, glabs, out)
	for i := range items {
		out[i].Note = items[i].note
	}
	s.account(out)
	return out
}

// judgeAll fills the verdicts of every rollout with a label: from the
// judge's memory at once, the others concurrently (the judge bounds its own
// concurrency). Rollouts of one label share their judge prompt's prefix:
// unless Config.AllAtOnce, the first of them is judged alone and the
// others once it is answered (warmFirst).
func (s *Server) judgeAll(ctx context.Context, labs []*schema.Label, rs []reward.Rollout) {
	var wg sync.WaitGroup
	var rubric judge.RubricHash // the key of hashed's rubric, hashed once for its responses in a row
	var hashed *schema.Label
	var pending []int // the rollouts to judge, by label in the order the labels come
	for i, lab := range labs {
		if lab == nil || rs[i].Empty {
			continue // an empty response is not judged: it is paid the floor
		}
		if lab != hashed {
			rubric, hashed = s.cfg.Judge.RubricKey(lab.Question, lab.Rubric), lab
		}
		if v, ok := s.cfg.Judge.CachedUnder(rubric, rs[i].Response); ok {
			rs[i].Verdicts = v
			continue
		}
		pending = append(pending, i)
	}
	for len(pending) > 0 {
		lab := labs[pending[0]]
		group, rest := pending[:0:0], pending[:0]
		for _, i := range pending {
			if labs[i] == lab {
				group = append(group, i)
			} else {
				rest = append(rest, i)
			}
		}
		pending = rest
		if s.cfg.Group && len(group) > 1 {
			wg.Go(func() { s.judgeGroup(ctx, lab, rs, group) })
			continue
		}
		wg.Go(func() {
			s.warmFirst(ctx, len(group), func() bool { return s.cfg.Judge.Warm(lab.Question, lab.Rubric) }, func(k int) { s.judge(ctx, lab, &rs[group[k]]) })
		})
	}
	wg.Wait()
}

// warmFirst runs judge(k) for the n judge requests of a group that share
// a rubric: the first alone, the others at once when it is answered
// (whatever its outcome) or has taken StallAfter (a judge that slow is not
// waited for, so that a hung judge fails the whole group in one judge
// timeout and the breaker sees it); or all at once with Config.AllAtOnce,
// or when warm says the judge server has said it caches that rubric's
// prefix (judge.Judge.Warm).
func (s *Server) warmFirst(ctx context.Context, n int, warm func() bool, judge func(k int)) {
	var wg sync.WaitGroup
	from := 0
	if !s.cfg.AllAtOnce && n > 1 && !warm() {
		first := make(chan struct{})
		wg.Go(func() {
			defer close(first)
			judge(0)
		})
		t := time.NewTimer(s.cfg.StallAfter)
		select {
		case <-first:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		from = 1
	}
	for k := from; k < n; k++ {
		wg.Go(func() { judge(k) })
	}
	wg.Wait()
}

// judgeGroup fills the verdicts of the rollouts group of lab from group
// judge requests (one, or parts of the group that fit the judge's response
// budget together), or each one's judge error; while the breaker is open
// the judge is not asked. A group request that fails (a reply still
// unusable after its repairs, a request over the judge's context: one
// response may cause either for all) is not paid as a failure of every
// response: each of its responses is judged alone instead, meeting the
// breaker as usual.
func (s *Server) judgeGroup(ctx context.Context, lab *schema.Label, rs []reward.Rollout, group []int) {
	call, err := s.breaker.allow(time.Now())
	if err != nil {
		for _, i := range group {
			rs[i].JudgeErr = "satisfaction judge: " + err.Error()
		}
		return
	}
	asked := make([]*reward.Rollout, len(group))
	for k, i := range group {
		asked[k] = &rs[i]
	}
	s.calls.start(time.Now())
	vs, errs := s.cfg.Judge.GroupVerdicts(ctx, lab.Question, lab.Rubric, asked)
	s.calls.done(time.Now())
	s.breaker.record(ctx, time.Now(), call, errors.Join(errs...))
	var again []int // the responses whose group request failed, judged alone
	for k, i := range group {
		if errs[k] == nil {
			rs[i].Verdicts = vs[k]
			continue
		}
		if ctx.Err() != nil {
			rs[i].JudgeErr = "satisfaction judge: " + errs[k].Error()
			continue
		}
		again = append(again, i)
	}
	s.warmFirst(ctx, len(again), func() bool { return false }, func(k int) { s.judge(ctx, lab, &rs[again[k]]) })
}

// judge fills r's verdicts, or its judge error; while the breaker is open
// the judge is not asked.
func (s *Server) judge(ctx context.Context, lab *schema.Label, r *reward.Rollout) {
	call, err := s.breaker.allow(time.Now())
	if err != nil {
		r.JudgeErr = "satisfaction judge: " + err.Error()
		return
	}
	s.calls.start(time.Now())
	v, err := s.cfg.Judge.Verdicts(ctx, lab.Question, lab.Rubric, r)
	s.calls.done(time.Now())
	s.breaker.record(ctx, time.Now(), call, err)
	if err != nil {
		r.JudgeErr = "satisfaction judge: " + err.Error()
		return
	}
	r.Verdicts = v
}

// errorScheme is the scheme of an item without a rubric: its own or its
// request's, else the server's default, else the one its unusable label
// names, else srar.
func (s *Server) errorScheme(it *scoreItem) string {
	if it.scheme == "" && s.cfg.Scheme == "" && it.badLabel != nil && it.badLabel.scheme != "" {
		return it.badLabel.scheme
	}
	return s.scheme(it.scheme, nil)
}

// scheme is the scheme of an item: its own or its request's, else the
// server's default, else the label's, else the label style's default.
func (s *Server) scheme(own string, lab *schema.Label) string {
	switch {
	case own != "":
		return own
	case s.cfg.Scheme != "":
		return s.cfg.Scheme
	case lab != nil && lab.Scheme != "":
		return lab.Scheme
	case lab != nil:
		return schema.DefaultScheme(lab.Style)
	}
	return schema.SchemeSRaR
}

// resolve finds an item's rubric: the label it carries, else the corpus's by
// problem id, by question text, by prompt, or by the prompt part of an
// OpenRLHF query. A label that did not parse is replaced by the corpus's
// rubric of the item's problem id or the label's own id, and the item's
// note says so; no text lookup stands in for it. The message says why there
// is no rubric.
func (s *Server) resolve(it *scoreItem) (*schema.Label, string) {
	if it.label != nil {
		return it.label, ""
	}
	if it.badLabel != nil {
		return s.fallback(it)
	}
	l, msg := s.find(it)
	if l != nil && it.answer != "" && it.answer != l.GroundTruth {
		c := *l
		c.GroundTruth = it.answer // the label is the ground truth the user has
		l = &c
	}
	return l, msg
}

// fallback finds the corpus's rubric for an item whose label did not parse,
// by the item's problem id, else the label's own id.
func (s *Server) fallback(it *scoreItem) (*schema.Label, string) {
	bad := it.badLabel
	id := cmp.Or(it.problemID, bad.id)
	switch {
	case s.cfg.Index == nil:
		return nil, bad.reason + "; and rewardd runs without --corpus to find the problem's rubric in"
	case id == "":
		return nil, bad.reason + "; and neither the item nor the label names a problem id to find the rubric by in the corpus"
	}
	l, ok := s.cfg.Index.ByID(id)
	if !ok {
		return nil, fmt.Sprintf("%s; and problem id %q is not in the corpus (%d problems)", bad.reason, id, s.cfg.Index.Len())
	}
	it.note = fmt.Sprintf("the label was not used (%s); scored against the corpus's rubric of problem %s", bad.reason, id)
	if n := s.fallbacks.Add(1); n <= 10 || n%1000 == 0 {
		s.log.Warn("label unusable, rubric from the corpus", "problem_id", id, "reason", bad.reason, "so_far", n)
	}
	return l, ""
}

// find looks an item's rubric up in the corpus.
func (s *Server) find(it *scoreItem) (*schema.Label, string) {
	x := s.cfg.Index
	if x == nil && it.answer != "" {
		return nil, "no rubric: the label is an answer, not a reward spec (distill export's label column), and rewardd runs without --corpus to find the problem's rubric in"
	}
	if x == nil {
		return nil, "no rubric: the item carries no label and rewardd runs without --corpus"
	}
	var tried []string
	if it.problemID != "" {
		if l, ok := x.ByID(it.problemID); ok {
			return l, ""
		}
		tried = append(tried, fmt.Sprintf("problem_id %q is not in the corpus", it.problemID))
	}
	lookups := []struct {
		text, what string
		find       func(string) (*schema.Label, bool, error)
	}{
		{it.question, "question", x.ByText},
		{it.prompt, "prompt", x.ByPrompt},
		{PromptOfQuery(it.query), "query", x.ByPrompt},
	}
	for _, lk := range lookups {
		if strings.TrimSpace(lk.text) == "" {
			continue
		}
		l, ok, err := lk.find(lk.text)
		if err != nil {
			return nil, fmt.Sprintf("no rubric: the %s: %v", lk.what, err)
		}
		if ok {
			return l, ""
		}
		tried = append(tried, fmt.Sprintf("the %s matches no problem text (whitespace-normalized)", lk.what))
	}
	if len(tried) == 0 {
		return nil, "no rubric: the item names no problem; give problem_id, question, prompt or label"
	}
	return nil, fmt.Sprintf("no rubric in the corpus (%d problems): %s; or send the label", x.Len(), strings.Join(tried, "; "))
}

// account counts results in the metrics and logs the items that could not
// be scored and the judgments that failed.
func (s *Server) account(rs []reward.Result) {
	s.m.results(rs)
	s.noteErrors(rs)
	s.noteJudgeFailures(rs)
}

// noteJudgeFailures logs failed judgments (judge down, hanging, its replies
// unusable): one line at most every failLogEvery, with the first failure's
// reason and the count since the line before, so a judge that answers
// garbage is seen in the log without flooding it.
func (s *Server) noteJudgeFailures(rs []reward.Result) {
	var n int64
	var first *reward.Result
	for i := range rs {
		if rs[i].Error == "" && !rs[i].JudgeOK {
			if first == nil {
				first = &rs[i]
			}
			n++
		}
	}
	if n == 0 {
		return
	}
	total := s.judgeFails.Add(n)
	if since, ok := s.failLog.allow(time.Now(), total); ok {
		s.log.Warn("judgments failed", "judge_error", first.JudgeError, "problem_id", first.ProblemID,
			"failed_since_last_line", since, "failed_so_far", total, "next_line_in", failLogEvery.String())
	}
}

// failLogEvery is the least time between two lines about failed judgments.
const failLogEvery = 10 * time.Second

// everyLog lets a log line through at most once every failLogEvery. It is
// safe for concurrent use.
type everyLog struct {
	mu       sync.Mutex
	next     time.Time
	lastSeen int64 // the running count at the last line
}

// allow reports whether a line may be written now, and how much of the
// running count total came since the last line.
func (e *everyLog) allow(now time.Time, total int64) (since int64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Before(e.next) {
		return 0, false
	}
	e.next = now.Add(failLogEvery)
	since, e.lastSeen = total-e.lastSeen, total
	return since, true
}

// noteErrors logs items that could not be scored: the first ten, then one
// in a thousand, so a misconfigured trainer is seen without flooding.
func (s *Server) noteErrors(rs []reward.Result) {
	for _, r := range rs {
		if r.Error == "" {
			continue
		}
		if n := s.itemErrs.Add(1); n <= 10 || n%1000 == 0 {
			s.log.Warn("item not scored", "error", r.Error, "problem_id", r.ProblemID, "errors_so_far", n)
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	writeJSONWith(w, code, v, new(bytes.Buffer))
}

// answer writes v with status 200, encoded in a pooled buffer.
func (s *Server) answer(w http.ResponseWriter, v any) {
	buf := s.buffer()
	writeJSONWith(w, http.StatusOK, v, buf)
	s.release(buf)
}

// answerGroup writes a /v1/score_group answer with status 200, encoded
// without reflection in a pooled buffer.
func (s *Server) answerGroup(w http.ResponseWriter, g groupJSON) {
	buf := s.buffer()
	defer s.release(buf)
	b, ok := g.appendJSON(buf.AvailableBuffer())
	if !ok {
		writeJSONWith(w, http.StatusOK, g, buf)
		return
	}
	buf.Write(b)
	writeBuffer(w, http.StatusOK, buf)
}

// writeJSONWith writes v as one line of JSON, encoded in buf.
func writeJSONWith(w http.ResponseWriter, code int, v any, buf *bytes.Buffer) {
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		_ = json.NewEncoder(buf).Encode(map[string]string{"error": "encoding the answer: " + err.Error()})
	}
	writeBuffer(w, code, buf)
}

// writeBuffer writes buf as the JSON body of an answer with status code.
func writeBuffer(w http.ResponseWriter, code int, buf *bytes.Buffer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// maxPooledBuffer bounds the buffers kept for reuse, so that one large
// request does not hold its memory for good.
const maxPooledBuffer = 1 << 20

func (s *Server) buffer() *bytes.Buffer {
	if b, ok := s.bufs.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (s *Server) release(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		b.Reset()
		s.bufs.Put(b)
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// Serve answers requests on ln until ctx ends, then stops taking new ones
// and waits up to drain for the requests in flight to be answered.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2*time.Minute + 2*s.cfg.QueueWait + s.cfg.Timeout + time.Minute, // read, waits, judging, answer
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	reapCtx, stopReaper := context.WithCancel(ctx)
	var reaper sync.WaitGroup
	reaper.Go(func() { s.sessions.run(reapCtx) })
	if s.elicit != nil {
		reaper.Go(func() { s.runElicitor(reapCtx) })
	}
	defer func() { stopReaper(); reaper.Wait() }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("draining", "in_flight", s.m.inflight.Load(), "timeout", drain.String())
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(dctx)
	serr := <-served // http.ErrServerClosed once Shutdown has begun
	if err != nil {
		return fmt.Errorf("draining the requests in flight: %w", err)
	}
	if serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", serr)
	}
	return nil
}
