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
	"sync"
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
	Log    *review.Log
	// Token, when set, must come with every request: as ?token= (the page
	// then keeps it in a cookie) or "Authorization: Bearer TOKEN". Set it
	// when the server listens beyond loopback.
	Token string
	// Loopback: the server listens on a loopback address; requests must
	// then name a loopback host.
	Loopback bool
	Logger   *slog.Logger
	Now      func() time.Time // default time.Now
}

// Server is the review page's HTTP handler.
type Server struct {
	opt    Options
	key    string // the page key every POST carries
	tmpl   *template.Template
	static http.Handler
	// decide serializes the decisions, so that an undo takes back the
	// decision before it and no other.
	decide sync.Mutex
}

// tokenCookie keeps the access token after the first visit.
const tokenCookie = "review_token"

// New checks opt and returns the handler.
func New(opt Options) (*Server, error) {
	if opt.Corpus == nil || opt.Log == nil {
		return nil, errors.New("review page: needs a corpus and a log")
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
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
	return &Server{opt: opt, key: key, tmpl: tmpl, static: http.StripPrefix("/static/", http.FileServer(http.FS(sub)))}, nil
}

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
	if s.opt.Loopback && !loopbackHost(r.Host) {
		http.Error(w, "this page answers only to a loopback host name (127.0.0.1, localhost, [::1])", http.StatusMisdirectedRequest)
		return
	}
	if !s.authorized(w, r) {
		http.Error(w, "an access token is needed: open the URL validate review printed", http.StatusUnauthorized)
		return
	}
	switch {
	case r.URL.Path == "/healthz":
		fmt.Fprintln(w, "ok")
	case strings.HasPrefix(r.URL.Path, "/static/"):
		s.static.ServeHTTP(w, r)
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.page(w, r)
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

// authorized checks the access token when there is one, and keeps a token
// given in the URL in a cookie.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.opt.Token == "" {
		return true
	}
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
	Record string            `json:"record"`
	Item   int32             `json:"item"`
	Action string            `json:"action"`
	Reason string            `json:"reason"`
	After  *review.ItemState `json:"after"`
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
	s.decide.Lock()
	defer s.decide.Unlock()
	entry, status, err := s.entryOf(r.URL.Path, req)
	if err != nil {
		apiError(w, status, err.Error())
		return
	}
	saved, err := s.opt.Log.Append(entry)
	if err != nil {
		s.opt.Logger.Error("review: the decision was not saved", "err", err)
		apiError(w, http.StatusInternalServerError, "the decision was not saved: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "seq": saved.Seq})
}

// entryOf turns a request into the entry to log, or says why not (with
// the HTTP status).
func (s *Server) entryOf(path string, req apiRequest) (review.Entry, int, error) {
	now := s.opt.Now()
	if path == "/api/undo" {
		last := review.Replay(s.opt.Log.Header().Reviewer, s.opt.Log.Entries()).LastStanding()
		if last == 0 {
			return review.Entry{}, http.StatusConflict, errors.New("nothing to undo")
		}
		return review.Entry{Time: now, Action: review.ActionUndo, Undoes: last}, 0, nil
	}
	rec := s.opt.Corpus.Record(req.Record)
	if rec == nil {
		return review.Entry{}, http.StatusNotFound, fmt.Errorf("no record %q in this corpus", req.Record)
	}
	var e review.Entry
	var err error
	switch path {
	case "/api/item":
		e, err = review.ItemEntry(rec, req.Item, review.ItemDecision{Action: req.Action, Reason: req.Reason, After: req.After}, now)
	case "/api/record":
		e, err = review.RecordEntry(rec, req.Action, req.Reason, now)
	default:
		return review.Entry{}, http.StatusNotFound, fmt.Errorf("no such call %s", path)
	}
	if err != nil {
		return review.Entry{}, http.StatusUnprocessableEntity, err
	}
	return e, 0, nil
}

func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"ok": false, "error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent: a failure leaves the client a short body, and no one else to tell
}
