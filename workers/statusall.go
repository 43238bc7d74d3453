package workers

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/job"
)

// Workers is what `distill status` shows of several run directories, the
// workers of one partitioned job: one row each and their total.
type Workers struct {
	Workers []*pipeline.Status `json:"workers"`
	Total   Total              `json:"total"`
}

// Total adds up the workers' figures.
type Total struct {
	Problems pipeline.ProblemCounts `json:"problems"` // summed over the workers; input rows are each worker's, not summed
	Records  int64                  `json:"records"`
	CostUSD  float64                `json:"cost_usd"`
	Tokens   int64                  `json:"tokens"`
	// Statuses counts the workers by status ("finished", "running", ...).
	Statuses map[string]int `json:"statuses"`
	// ETASeconds is the latest of the running workers' ETAs.
	ETASeconds *float64 `json:"eta_seconds,omitempty"`
	// Partitions says which partitions of K the workers cover.
	Partitions string `json:"partitions"`
	// InputsDiffer names the workers that read other input than the first
	// (their manifests' input digests); a merge refuses them.
	InputsDiffer []string `json:"inputs_differ,omitempty"`
	// Budget says what the workers may spend together (budgetOver).
	Budget string `json:"budget,omitempty"`
}

// ReadWorkers reads the status of each run directory.
func ReadWorkers(dirs []string) (*Workers, error) {
	w := &Workers{Total: Total{Statuses: map[string]int{}}}
	for _, dir := range dirs {
		st, err := pipeline.ReadStatus(dir)
		if err != nil {
			return nil, err
		}
		w.Workers = append(w.Workers, st)
		w.Total.add(st)
	}
	w.Total.Partitions = coverage(w.Workers)
	ins := make([]workerInput, len(w.Workers))
	for i, st := range w.Workers {
		ins[i] = workerInput{st.Dir, st.Manifest.Inputs}
	}
	w.Total.InputsDiffer = inputsDiffer(ins)
	w.Total.Budget = budgetOver(w.Workers, w.Total.CostUSD)
	return w, nil
}

// budgetOver says what the workers' budgets let them spend together, and
// what they spent: "" when no worker has a budget.
func budgetOver(ws []*pipeline.Status, spent float64) string {
	shares := map[job.BudgetShare]int{}
	for _, st := range ws {
		if st.Report != nil && st.Report.Budget != nil {
			shares[*st.Report.Budget]++
		} else {
			shares[job.BudgetShare{}]++
		}
	}
	if _, none := shares[job.BudgetShare{}]; none && len(shares) == 1 {
		return ""
	}
	if len(shares) > 1 {
		return fmt.Sprintf("the workers enforce different budgets (set budget: and budget.scope alike in every worker's job); spent $%.4f together", spent)
	}
	var b job.BudgetShare
	for s := range shares {
		b = s
	}
	limit := func(cost float64, tokens int64) string {
		var parts []string
		if cost > 0 {
			parts = append(parts, fmt.Sprintf("$%.4g", cost))
		}
		if tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d tokens", tokens))
		}
		return strings.Join(parts, " and ")
	}
	if b.Scope == job.BudgetPerJob {
		return fmt.Sprintf("%s for the job (budget.scope job), %s for each of %d workers; spent $%.4f together",
			limit(b.JobMaxCostUSD, b.JobMaxTokens), limit(b.MaxCostUSD, b.MaxTokens), b.Workers, spent)
	}
	return fmt.Sprintf("%s for each worker (budget.scope worker): the %d workers may spend up to %s together; spent $%.4f",
		limit(b.MaxCostUSD, b.MaxTokens), b.Workers, limit(b.JobMaxCostUSD, b.JobMaxTokens), spent)
}

func (t *Total) add(st *pipeline.Status) {
	t.Records += st.Manifest.Rows
	r := st.Report
	if r == nil {
		t.Statuses["no report"]++
		return
	}
	t.Statuses[workerState(r)]++
	p, q := &t.Problems, r.Problems
	p.InputLines, p.InputRows = max(p.InputLines, q.InputLines), max(p.InputRows, q.InputRows)
	p.BadLines = max(p.BadLines, q.BadLines) // every worker reads every line
	p.Duplicates += q.Duplicates
	p.Unique += q.Unique
	p.Done += q.Done
	p.Failed += q.Failed
	p.LeftOut += q.LeftOut
	p.Pending += q.Pending
	t.CostUSD += r.LLM.Total.CostUSD
	t.Tokens += r.LLM.Total.PromptTokens + r.LLM.Total.CompletionTokens
	if r.ETASeconds != nil && (t.ETASeconds == nil || *r.ETASeconds > *t.ETASeconds) {
		eta := *r.ETASeconds
		t.ETASeconds = &eta
	}
}

// workerState is a worker's status, with why it stopped.
func workerState(r *pipeline.Report) string {
	if r.Status == pipeline.StatusStopped && r.StoppedBy != "" {
		return r.Status + " (" + r.StoppedBy + ")"
	}
	return r.Status
}

// coverage says which partitions the workers hold: "0..15 of 16, all" or
// what is missing or held twice.
func coverage(ws []*pipeline.Status) string {
	held := map[int][]string{}
	k := 0
	for _, st := range ws {
		if st.Report == nil || st.Report.Partition == nil {
			return "not all workers are partitioned"
		}
		p, err := job.ParsePartition(st.Report.Partition.Partition)
		if err != nil || (k != 0 && p.Count != k) {
			return "the workers split the input in different numbers of partitions"
		}
		k = p.Count
		held[p.Index] = append(held[p.Index], st.Dir)
	}
	var missing, twice []string
	for i := range k {
		switch n := len(held[i]); {
		case n == 0:
			missing = append(missing, fmt.Sprint(i))
		case n > 1:
			twice = append(twice, fmt.Sprintf("%d (%s)", i, strings.Join(held[i], ", ")))
		}
	}
	s := fmt.Sprintf("%d of %d", len(held), k)
	if len(missing) > 0 {
		s += "; missing " + strings.Join(missing, ", ")
	}
	if len(twice) > 0 {
		s += "; held twice " + strings.Join(twice, "; ")
	}
	if len(missing) == 0 && len(twice) == 0 {
		s += ", all"
	}
	return s
}

// WriteText prints one row per worker and their total.
func (w *Workers) WriteText(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "worker\tpartition\tstatus\tin partition\tdone\tfailed\tleft out\tpending\trecords\tcost USD\tETA")
	for _, st := range w.Workers {
		r := st.Report
		if r == nil {
			fmt.Fprintf(tw, "%s\t-\tno report\t-\t-\t-\t-\t-\t%d\t-\t-\n", st.Dir, st.Manifest.Rows)
			continue
		}
		part, inPart := "all", "-"
		if r.Partition != nil {
			part = r.Partition.Partition
			inPart = fmt.Sprintf("%d/%d", r.Partition.RowsInPartition, r.Partition.RowsSeen)
		}
		p := r.Problems
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.4f\t%s\n", st.Dir, part, workerState(r), inPart,
			p.Done, p.Failed, p.LeftOut, p.Pending, st.Manifest.Rows, r.LLM.Total.CostUSD, eta(r.ETASeconds))
	}
	t := w.Total
	p := t.Problems
	fmt.Fprintf(tw, "total (%d workers)\t\t%s\t%d unique\t%d\t%d\t%d\t%d\t%d\t%.4f\t%s\n", len(w.Workers), t.statusWord(),
		p.Unique, p.Done, p.Failed, p.LeftOut, p.Pending, t.Records, t.CostUSD, eta(t.ETASeconds))
	_ = tw.Flush() // a failed write stays in out: distill's standard output keeps it, checked at exit (internal/errwriter)
	fmt.Fprintf(out, "partitions: %s\n", t.Partitions)
	for _, d := range t.InputsDiffer {
		fmt.Fprintf(out, "input differs: %s\n", d)
	}
	if t.Budget != "" {
		fmt.Fprintf(out, "budget: %s\n", t.Budget)
	}
}

// statusWord is "finished" when every worker finished, else the count of
// each status.
func (t Total) statusWord() string {
	if len(t.Statuses) == 1 {
		for s := range t.Statuses {
			return s
		}
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(t.Statuses)) {
		parts = append(parts, fmt.Sprintf("%d %s", t.Statuses[s], s))
	}
	return strings.Join(parts, ", ")
}

func eta(s *float64) string {
	if s == nil {
		return "-"
	}
	return (time.Duration(*s) * time.Second).Round(time.Second).String()
}

// WriteJSON prints the workers and their total as one JSON document.
func (w *Workers) WriteJSON(out io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(w)
}
