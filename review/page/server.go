package page

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/review"
)

//go:embed page.html.tmpl static
var assets embed.FS

// MaxBody bounds the body of a POST: one decision.
const MaxBody = 64 << 10

// Options configure a Server.
type Options struct {
	Corpus *review.Corpus
	// Logs are the reviewer's logs, one per part of the corpus, in
	// Corpus.Parts order.
	Logs []*review.Log
	// Token must come with every request: as ?token= (the page then keeps
	// it in a cookie) or "Authorization: Bearer TOKEN". It is required on
	// a loopback address too, where any local user could otherwise read
	// the page and decide under the reviewer's name.
	Token string
	// Loopback: the server listens on a loopback address; requests must
	// then name a loopback host (no DNS rebinding).
	Loopback bool
	Logger   *slog.Logger
	Now      func() time.Time // default time.Now
}

// Server is the review page's HTTP handler.
type Server struct {
	opt    Options
	sess   *review.Session
	key    string // the page key every POST carries
	tmpl   *template.Template
	static http.Handler
}

// tokenCookie keeps the access token after the first visit.
const tokenCookie = "review_token"

// New checks opt and returns the handler.
func New(opt Options) (*Server, error) {
	if opt.Corpus == nil || len(opt.Logs) == 0 {
		return nil, errors.New("review page: needs a corpus and its logs")
	}
	if opt.Token == "" {
		return nil, errors.New("review page: needs an access token (RandomToken makes one)")
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	sess, err := review.NewSession(opt.Corpus, opt.Logs)
	if err != nil {
		return nil, err
	}
	key, err := RandomToken()
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("page.html.tmpl").Funcs(funcs).ParseFS(assets, "page.html.tmpl")
	if err != nil {
		return nil, fmt.Errorf("review page: parsing the template: %w", err)
	}
	sub, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, err
	}
	return &Server{opt: opt, sess: sess, key: key, tmpl: tmpl, static: http.StripPrefix("/static/", http.FileServer(http.FS(sub)))}, nil
}

// Session is the reviewer's session the page serves.
func (s *Server) Session() *review.Session { return s.sess }

// RandomToken is 32 random hex digits.
func RandomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// IsLoopback reports whether the listen address addr is on a loopback
// interface only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer") // the URL may hold the token
	if s.opt.Loopback && !loopbackHost(r.Host) {
		http.Error(w, "this page answers only to a loopback host name (127.0.0.1, localhost, [::1])", http.StatusMisdirectedRequest)
		return
	}
	if !s.authorized(w, r) {
		http.Error(w, "an access token is needed: open the URL validate review printed (it ends in ?token=...)", http.StatusUnauthorized)
		return
	}
	switch {
	case r.URL.Path == "/healthz":
		fmt.Fprintln(w, "ok")
	case strings.HasPrefix(r.URL.Path, "/static/"):
		s.static.ServeHTTP(w, r)
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.page(w, r)
	case r.URL.Path == "/api/view" && r.Method == http.MethodGet:
		s.view(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/"):
		s.api(w, r)
	default:
		http.NotFound(w, r)
	}
}

// loopbackHost reports whether a Host header names a loopback host.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// authorized checks the access token: from the URL (then kept in an
// HttpOnly, SameSite=Strict cookie), the cookie, or a Bearer header.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	given := r.URL.Query().Get("token")
	if given == "" {
		if c, err := r.Cookie(tokenCookie); err == nil {
			given = c.Value
		}
	}
	if given == "" {
		given, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if subtle.ConstantTimeCompare([]byte(given), []byte(s.opt.Token)) != 1 {
		return false
	}
	if r.URL.Query().Get("token") != "" {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.opt.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	return true
}

// apiRequest is the body of every POST.
type apiRequest struct {
	Record   string            `json:"record"`
	Question *int32            `json:"question"`
	Item     int32             `json:"item"`
	Action   string            `json:"action"`
	Reason   string            `json:"reason"`
	After    *review.ItemState `json:"after"`
	// Seen is the seq of the decision the page showed on the item (0:
	// none); absent: not checked.
	Seen *int64 `json:"seen"`
	// Seq names the decision an undo takes back.
	Seq int64 `json:"seq"`
}

// api records one decision: POST /api/item, /api/record or /api/undo.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		apiError(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Review-Key")), []byte(s.key)) != 1 {
		apiError(w, http.StatusForbidden, "the page key is missing or stale: reload the page")
		return
	}
	var req apiRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "the request body is not a decision: "+err.Error())
		return
	}
	var out map[string]any
	var err error
	switch r.URL.Path {
	case "/api/item":
		out, err = s.decideItem(r, req)
	case "/api/record":
		out, err = s.decideRecord(req)
	case "/api/undo":
		out, err = s.undo(r, req)
	default:
		apiError(w, http.StatusNotFound, "no such call "+r.URL.Path)
		return
	}
	if err != nil {
		status := statusOf(err)
		if status == http.StatusInternalServerError {
			s.opt.Logger.Error("review: the decision was not saved", "err", err)
			apiError(w, status, "the decision was not saved: "+err.Error())
			return
		}
		apiError(w, status, err.Error())
		return
	}
	out["ok"] = true
	writeJSON(w, http.StatusOK, out)
}

// statusOf is the HTTP status of a decision's error.
func statusOf(err error) int {
	switch {
	case errors.Is(err, review.ErrNoRecord):
		return http.StatusNotFound
	case errors.Is(err, review.ErrStale), errors.Is(err, review.ErrCannotUndo):
		return http.StatusConflict
	case errors.Is(err, review.ErrNoChange), errors.Is(err, review.ErrInvalidEdit), errors.Is(err, review.ErrBadDecision), errors.Is(err, errRequest):
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// errRequest marks a request that names no item or action the page has.
var errRequest = errors.New("not a decision the page makes")

// decideItem logs an accept, reject or edit and answers with the item.
func (s *Server) decideItem(r *http.Request, req apiRequest) (map[string]any, error) {
	rec, err := s.sess.Record(r.Context(), req.Record)
	if err != nil {
		return nil, err
	}
	k := keyIn(rec, req.Question, req.Item)
	e, rec, err := s.sess.DecideItem(r.Context(), req.Record, k, review.ItemDecision{Action: req.Action, Reason: req.Reason, After: req.After, Seen: req.Seen}, s.opt.Now())
	if err != nil {
		return nil, err
	}
	s.sess.Lock()
	defer s.sess.Unlock()
	return map[string]any{"entry": e, "item": itemOf(rec.Item(k), s.sess), "progress": progressOf(s.sess)}, nil
}

// keyIn is the key of the item of rec at question (nil: a math item) and
// item; a verl export's grounded question's items name its passage's
// record, not the id it is shown under.
func keyIn(rec *review.Record, question *int32, item int32) review.ItemKey {
	k := review.ItemKey{Record: rec.ID, Item: item}
	if question != nil {
		k.Question = *question + 1
	}
	for _, it := range rec.Items {
		if it.Key.Question == k.Question && it.Key.Item == k.Item {
			return it.Key
		}
	}
	return k
}

// decideRecord logs a skip, flag or unflag.
func (s *Server) decideRecord(req apiRequest) (map[string]any, error) {
	e, err := s.sess.DecideRecord(req.Record, req.Action, req.Reason, s.opt.Now())
	if err != nil {
		return nil, err
	}
	s.sess.Lock()
	defer s.sess.Unlock()
	return map[string]any{"entry": e, "flag": flagOf(s.sess, req.Record), "skipped": s.sess.IsSkipped(req.Record), "progress": progressOf(s.sess)}, nil
}

// undo logs the undo of decision req.Seq and says what it undid.
func (s *Server) undo(r *http.Request, req apiRequest) (map[string]any, error) {
	if req.Seq <= 0 {
		return nil, fmt.Errorf("%w: an undo names the decision it takes back (seq)", errRequest)
	}
	undo, undone, err := s.sess.Undo(req.Record, req.Seq, s.opt.Now())
	if err != nil {
		return nil, err
	}
	out := map[string]any{"entry": undo, "undone": undone, "message": "Undid the " + review.Describe(undone)}
	rec, err := s.sess.Record(r.Context(), req.Record)
	s.sess.Lock()
	defer s.sess.Unlock()
	if err == nil {
		if it := rec.Item(undone.Key()); it != nil {
			out["item"] = itemOf(it, s.sess)
		}
	}
	out["flag"], out["skipped"] = flagOf(s.sess, req.Record), s.sess.IsSkipped(req.Record)
	out["progress"] = progressOf(s.sess)
	return out, nil
}

func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"ok": false, "error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent: a failure leaves the client a short body, and no one else to tell
}
