package page

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/schema"
)

// viewJSON is what /api/view answers: one record with its items and the
// reviewer's standing decisions, its place in the queue and its
// neighbours, so that the page shows it in place and fetches the next
// before it is asked for.
type viewJSON struct {
	Record   *recordJSON  `json:"record"` // null when no record passes the filter
	Pos      int          `json:"pos"`    // from 0; -1 when the record is not in the queue
	Queue    int          `json:"queue"`
	Next     string       `json:"next"` // "" at the end
	Prev     string       `json:"prev"`
	Progress progressJSON `json:"progress"`
}

type progressJSON struct {
	Reviewed int `json:"reviewed"`
	Total    int `json:"total"`
}

type recordJSON struct {
	ID        string         `json:"id"`
	Source    string         `json:"source"`
	Split     string         `json:"split"`
	Style     string         `json:"style"`
	Problem   string         `json:"problem"`
	Answer    string         `json:"answer"`
	Reference string         `json:"reference"`
	Title     string         `json:"title"`
	Passage   string         `json:"passage"`
	NCorrect  int            `json:"n_correct"`
	NRollouts int            `json:"n_rollouts"`
	Rollouts  []rolloutJSON  `json:"rollouts"`
	Questions []questionJSON `json:"questions"`
	Items     []itemJSON     `json:"items"`
	Hidden    int            `json:"hidden"` // items the filter hides
	Flag      *review.Entry  `json:"flag"`   // the standing flag
	Skipped   bool           `json:"skipped"`
	// LineBreaks: an item of this style may hold a line break (not SRaR).
	LineBreaks bool     `json:"line_breaks"`
	Types      []string `json:"types"` // the types an edit may choose
}

type rolloutJSON struct {
	Index   int32  `json:"index"`
	Correct bool   `json:"correct"`
	Answer  string `json:"answer"`
	Finish  string `json:"finish"`
	Text    string `json:"text"`
}

type questionJSON struct {
	Index int32  `json:"index"`
	Text  string `json:"text"`
}

type itemJSON struct {
	// Key names the item on the page: its id ("3"), or a criterion's
	// question and position ("q0-2").
	Key            string        `json:"key"`
	Question       *int32        `json:"question"` // a criterion's question, from 0
	ID             int32         `json:"id"`
	Type           string        `json:"type"`
	Name           string        `json:"name"`
	Text           string        `json:"text"`
	Weight         float64       `json:"weight"`
	Valid          *bool         `json:"valid"`
	ValidReason    *string       `json:"valid_reason"`
	SatRate        *float64      `json:"sat_rate"`
	Corr           *float64      `json:"corr"`
	EmpiricalValid *bool         `json:"empirical_valid"`
	Edge           *float64      `json:"edge"`
	Why            []string      `json:"why"`
	Decision       *review.Entry `json:"decision"`
}

// view answers GET /api/view?rec=ID (or pos=N) with the filter's query.
func (s *Server) view(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := filterOf(q)
	s.sess.Lock()
	queue := s.sess.Queue(f)
	v := viewJSON{Queue: queue.Len(), Pos: -1, Progress: progressOf(s.sess)}
	id := q.Get("rec")
	if id != "" && !s.opt.Corpus.Has(id) {
		s.sess.Unlock()
		apiError(w, http.StatusNotFound, "no record "+strconv.Quote(id)+" in this review")
		return
	}
	if id == "" && queue.Len() > 0 {
		pos, _ := strconv.Atoi(q.Get("pos"))
		id = queue.ID(max(0, min(pos, queue.Len()-1)))
	}
	if id != "" {
		v.Pos = queue.Index(id)
		if v.Pos >= 0 {
			if v.Pos+1 < queue.Len() {
				v.Next = queue.ID(v.Pos + 1)
			}
			if v.Pos > 0 {
				v.Prev = queue.ID(v.Pos - 1)
			}
		} else if queue.Len() > 0 {
			v.Next = queue.ID(0) // a record outside the queue: on to its start
		}
	}
	s.sess.Unlock()
	if id == "" {
		writeJSON(w, http.StatusOK, v)
		return
	}
	rec, err := s.sess.Record(r.Context(), id)
	if err != nil {
		apiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.sess.Lock()
	v.Record = recordOf(rec, f, s.sess)
	s.sess.Unlock()
	writeJSON(w, http.StatusOK, v)
}

// recordOf is rec as the page shows it under f.
func recordOf(rec *review.Record, f review.Filter, st review.Standing) *recordJSON {
	out := &recordJSON{ID: rec.ID, Source: rec.Source, Split: rec.Split, Style: rec.Style, Problem: rec.Problem, Answer: rec.Answer,
		Reference: rec.Reference, Title: rec.Title, Passage: rec.Passage, NCorrect: rec.NCorrect, NRollouts: rec.NRollouts,
		Rollouts: []rolloutJSON{}, Questions: []questionJSON{}, Items: []itemJSON{}, Skipped: st.IsSkipped(rec.ID),
		LineBreaks: review.LineBreaks(rec.Style), Types: review.EditTypes(rec.Style)}
	if out.Types == nil {
		out.Types = []string{}
	}
	for _, ro := range rec.Rollouts {
		out.Rollouts = append(out.Rollouts, rolloutJSON{Index: ro.Index, Correct: ro.Correct, Answer: ro.ExtractedAnswer, Finish: ro.FinishReason, Text: ro.Text})
	}
	for _, q := range rec.Questions {
		out.Questions = append(out.Questions, questionJSON{Index: q.Index, Text: q.Text})
	}
	for i := range rec.Items {
		it := &rec.Items[i]
		if !f.Match(rec, it, st) {
			out.Hidden++
			continue
		}
		out.Items = append(out.Items, itemOf(it, st))
	}
	out.Flag = flagOf(st, rec.ID)
	return out
}

// itemOf is it as the page shows it, with its standing decision.
func itemOf(it *review.Item, st review.Standing) itemJSON {
	out := itemJSON{Key: strconv.Itoa(int(it.ID)), ID: it.ID, Type: it.Type, Name: it.Name, Text: it.Text, Weight: it.Weight,
		Valid: it.Valid, ValidReason: it.ValidReason, SatRate: it.SatRate, Corr: it.Corr, EmpiricalValid: it.EmpiricalValid,
		Edge: it.Edge, Why: it.Why}
	if out.Why == nil {
		out.Why = []string{}
	}
	if it.Key.Question > 0 {
		q := it.Key.Question - 1
		out.Question = &q
		out.Key = "q" + strconv.Itoa(int(q)) + "-" + out.Key
	}
	if e, ok := st.Decision(it.Key); ok {
		out.Decision = &e
	}
	return out
}

// flagOf is the standing flag of record id for an answer: null when none.
func flagOf(st review.Standing, id string) *review.Entry {
	if e, ok := st.Flag(id); ok {
		return &e
	}
	return nil
}

func progressOf(s *review.Session) progressJSON {
	r, t := s.Progress()
	return progressJSON{Reviewed: r, Total: t}
}

// filterOf reads the filter from the query: type, ji (judge said
// invalid), ei (empirically invalid), le (low edge), ur (not yet
// reviewed), fl (flagged).
func filterOf(q url.Values) review.Filter {
	on := func(k string) bool { return q.Get(k) == "1" }
	f := review.Filter{Type: q.Get("type"), JudgeInvalid: on("ji"), EmpiricalInvalid: on("ei"), LowEdge: on("le"), Unreviewed: on("ur"), Flagged: on("fl")}
	if !slices.Contains(append(slices.Clone(schema.ItemTypes), review.CriterionType), f.Type) {
		f.Type = ""
	}
	return f
}
