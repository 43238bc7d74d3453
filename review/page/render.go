package page

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/rubricforge/rubricforge/review"
)

// shell is what the page's template shows; the record itself is drawn by
// the page's script from /api/view, and redrawn in place.
type shell struct {
	Key, Reviewer, Corpus string
	Logs                  []string
	Running               bool
	Records, Total        int
	Sample                *review.Sample
	Problems              int
	Filter                review.Filter
	FilterQuery           string // the filter's query parameters, for the script
	Types                 []string
}

var funcs = template.FuncMap{}

// page renders the page's frame: header, filters, help, and the places
// the script draws the record in.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	f := filterOf(r.URL.Query())
	c := s.opt.Corpus
	v := shell{Key: s.key, Reviewer: s.sess.Reviewer(), Corpus: strings.Join(c.Paths, " "), Running: c.Running,
		Records: c.Len(), Total: c.Total, Sample: c.Sample, Problems: len(c.Problems), Filter: f, FilterQuery: query(f).Encode(), Types: c.Types()}
	for _, l := range s.sess.Logs() {
		v.Logs = append(v.Logs, l.Path())
	}
	var buf bytes.Buffer
	if err := s.tmpl.Execute(&buf, v); err != nil {
		s.opt.Logger.Error("review: rendering the page", "err", err)
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes()) // a failed write means the browser went away
}

// query is f as query parameters.
func query(f review.Filter) url.Values {
	q := url.Values{}
	if f.Type != "" {
		q.Set("type", f.Type)
	}
	for k, on := range map[string]bool{"ji": f.JudgeInvalid, "ei": f.EmpiricalInvalid, "le": f.LowEdge, "ur": f.Unreviewed, "fl": f.Flagged} {
		if on {
			q.Set(k, "1")
		}
	}
	return q
}
