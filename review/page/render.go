package page

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/schema"
)

// view is what the template shows.
type view struct {
	Key, Reviewer, Corpus, LogPath string
	Running                        bool
	Records, Grounded, Problems    int
	Pos, QueueLen                  int
	Reviewed, TotalItems           int
	Filter                         review.Filter
	FilterQuery                    template.URL // the filter's query parameters, for links
	Types                          []string
	Rec                            *review.Record
	Items                          []itemView
	Hidden                         int // items of the record the filter hides
	Flagged, Skipped               bool
	Focus                          int32
	PrevURL, NextURL, HereURL      template.URL
}

// itemView is one item and this reviewer's standing decision on it.
type itemView struct {
	review.Item
	Decision *review.Entry
}

var funcs = template.FuncMap{
	"pct": func(f *float64) string {
		if f == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100**f)
	},
	"fix2": func(f *float64) string {
		if f == nil {
			return "-"
		}
		return fmt.Sprintf("%+.2f", *f)
	},
	"weight":  func(w float64) string { return strconv.FormatFloat(w, 'g', -1, 64) },
	"percent": func(n, d int) int { return int(100 * float64(n) / float64(max(d, 1))) },
	"inc":     func(i int) int { return i + 1 },
	"str": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"deref": func(b *bool) bool { return b != nil && *b },
}

// filterOf reads the filter from the query.
func filterOf(q url.Values) review.Filter {
	on := func(k string) bool { return q.Get(k) == "1" }
	f := review.Filter{Type: q.Get("type"), JudgeInvalid: on("ji"), EmpiricalInvalid: on("ei"), LowEdge: on("le"), Unreviewed: on("ur")}
	if !slices.Contains(schema.ItemTypes, f.Type) {
		f.Type = ""
	}
	return f
}

// query is f as query parameters.
func query(f review.Filter) url.Values {
	q := url.Values{}
	if f.Type != "" {
		q.Set("type", f.Type)
	}
	for k, on := range map[string]bool{"ji": f.JudgeInvalid, "ei": f.EmpiricalInvalid, "le": f.LowEdge, "ur": f.Unreviewed} {
		if on {
			q.Set(k, "1")
		}
	}
	return q
}

// page renders one record of the queue: the one named by rec when it is
// in the queue, else the one at pos.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := filterOf(q)
	c := s.opt.Corpus
	st := review.Replay(s.opt.Log.Header().Reviewer, s.opt.Log.Entries())
	queue := review.Queue(c, f, st)
	pos, _ := strconv.Atoi(q.Get("pos"))
	if id := q.Get("rec"); id != "" {
		if i := slices.IndexFunc(queue, func(x *review.Record) bool { return x.ID == id }); i >= 0 {
			pos = i
		}
	}
	pos = max(0, min(pos, len(queue)-1))
	v := view{Key: s.key, Reviewer: st.Reviewer, Corpus: strings.Join(c.Paths, " "), LogPath: s.opt.Log.Path(), Running: c.Running,
		Records: len(c.Records), Grounded: c.Grounded, Problems: len(c.Problems), Pos: pos, QueueLen: len(queue),
		Filter: f, Types: typesOf(c)}
	v.Reviewed, v.TotalItems = review.Progress(c, st)
	fq := query(f)
	v.FilterQuery = template.URL(fq.Encode())
	if len(queue) > 0 {
		v.Rec = queue[pos]
		v.Flagged, v.Skipped = st.Flagged[v.Rec.ID], st.Skipped[v.Rec.ID]
		for _, it := range v.Rec.Items {
			if !f.Match(v.Rec, &it, st) {
				v.Hidden++
				continue
			}
			iv := itemView{Item: it}
			if e, ok := st.Items[review.ItemKey{Record: v.Rec.ID, Item: it.ID}]; ok {
				iv.Decision = &e
			}
			v.Items = append(v.Items, iv)
		}
		focus, _ := strconv.Atoi(q.Get("focus"))
		v.Focus = int32(focus)
		v.PrevURL = posURL(fq, max(pos-1, 0))
		v.NextURL = posURL(fq, min(pos+1, len(queue)-1))
		v.HereURL = posURL(fq, pos)
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

func posURL(fq url.Values, pos int) template.URL {
	q := url.Values{}
	for k, v := range fq {
		q[k] = v
	}
	q.Set("pos", strconv.Itoa(pos))
	return template.URL("/?" + q.Encode())
}

// typesOf lists the item types the corpus has, in schema.ItemTypes order.
func typesOf(c *review.Corpus) []string {
	has := map[string]bool{}
	for _, r := range c.Records {
		for _, it := range r.Items {
			has[it.Type] = true
		}
	}
	var out []string
	for _, t := range schema.ItemTypes {
		if has[t] {
			out = append(out, t)
		}
	}
	return out
}
