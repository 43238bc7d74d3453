package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/review/page"
)

const reviewUsage = `Usage: validate review CORPUS... [--addr 127.0.0.1:PORT] [--reviewer NAME] [--sample N --seed S]

Serves a local web page where a person reviews a corpus's rubric items,
one record at a time, by keyboard (or with the page's buttons). A math
record (srar, factual_process) shows its problem, ground truth and a few
rollouts, and every item with its type, weight, the validity judge's
verdict and reason and the measured figures (satisfaction rate,
correlation, edge). A grounded record shows its passage, and every
criterion of its questions with its weight, the judge's verdict against
the passage and whether its score varies over the closed-book answers.
Per item: accept, reject (with an optional reason) or edit its text and
weight (and a math item's type); per record: skip, flag or unflag. The page
updates in place: a key acts on the item it shows, once, or says on the
item why it was refused. The queue puts first the records whose items are
most likely wrong. Keys: j/k move, a/r/e decide, u undoes the last decision
made in the tab, ? lists them all.

Every decision is written and synced at once to the reviewer's log,
CORPUS/review/NAME.jsonl (RUN/review for a run's shard file, review/ beside
any other file), never among the corpus's shards; with several corpora,
each record's decisions go to the log beside its own corpus. A log is
readable by its owner only. A killed page loses at most the decision being
written; the damaged last line it leaves is cut off, and said so, at the
next start. Several reviewers review the same corpus at once, each with
their own --reviewer. A corpus a running distill run is writing is reviewed
as a snapshot (the page says so). --sample N --seed S reviews N records
drawn at random (the same seed draws the same records), for a corpus nobody
reviews whole. validate CORPUS then reports coverage, agreement and the
flagged records (text, --json, --html) and uses the decisions as people's
labels of the judge; distill export --review CORPUS/review applies them.

The page binds 127.0.0.1 by default and always asks for an access token,
on loopback too (any local user could read it otherwise): a random one,
printed in the URL on stderr, or the value of the variable --token-env
names. Bound to 0.0.0.0 it prints a URL other machines can open.

Examples:
  validate review runs/demo
  validate review runs/demo --reviewer alice --addr 127.0.0.1:8765
  validate review runs/math100k --sample 500 --seed 1
  validate review runs/docs-grounded --reviewer bob --addr 0.0.0.0:8766
`

func reviewCmd(ctx context.Context, args []string, e env) int {
	fs := newFlags("validate review", reviewUsage, e)
	addr := fs.String("addr", "127.0.0.1:8765", "address to serve the page on; e.g. --addr 127.0.0.1:9000 or --addr 0.0.0.0:8765 for other machines")
	reviewer := fs.String("reviewer", "", "your name, which names your log: letters, digits, '.', '_', '-' (default: $USER when it is such a name); e.g. --reviewer alice")
	tokenEnv := fs.String("token-env", "", "name of an environment variable holding the access token (default: a random token, printed in the URL); e.g. --token-env REVIEW_TOKEN")
	sample := fs.Int("sample", 0, "review a random sample of this many records, drawn by --seed (0: the whole corpus); e.g. --sample 500")
	seed := fs.Uint64("seed", 1, "seed of the --sample draw; the same seed draws the same records, a larger --sample a superset")
	paths, code, done := parseOrExit(fs, args)
	if done {
		return code
	}
	if *reviewer == "" {
		*reviewer = defaultReviewer(e.getenv)
	}
	if err := review.CheckReviewer(*reviewer); err != nil {
		fmt.Fprintf(e.stderr, "validate review: --reviewer: %v\n", err)
		return exitUsage
	}
	if *sample < 0 {
		fmt.Fprintln(e.stderr, "validate review: --sample is a number of records, 0 or more")
		return exitUsage
	}
	token := ""
	if *tokenEnv != "" {
		if token = e.getenv(*tokenEnv); token == "" {
			fmt.Fprintf(e.stderr, "validate review: --token-env %s: the variable is empty or not set\n", *tokenEnv)
			return exitUsage
		}
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		fmt.Fprintf(e.stderr, "validate review: --addr %q: %v (want HOST:PORT, e.g. 127.0.0.1:8765)\n", *addr, err)
		return exitUsage
	}
	if len(paths) == 0 {
		fmt.Fprintln(e.stderr, "validate review: no corpus given (a run directory, an export directory or shard files); see -h")
		return exitUsage
	}
	c, err := review.Open(ctx, paths, review.Options{Sample: *sample, Seed: *seed})
	if err != nil {
		fmt.Fprintf(e.stderr, "validate review: %v\n", err)
		if audit.IsUsage(err) {
			return exitUsage
		}
		return exitFailed
	}
	defer func() { _ = c.Close() }() // the corpus was only read: closing loses nothing
	if c.Len() == 0 {
		fmt.Fprintf(e.stderr, "validate review: %s holds no record to review\n", strings.Join(paths, ", "))
		return exitFailed
	}
	logs, err := openLogs(c, *reviewer, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "validate review: %v\n", err)
		closeLogs(logs, e)
		return exitFailed
	}
	code = serveReview(ctx, c, logs, *addr, token, e)
	if !closeLogs(logs, e) && code == exitOK { // every decision was synced as it came; say so anyway
		return exitFailed
	}
	return code
}

// closeLogs closes logs, saying which failed; false when one did.
func closeLogs(logs []*review.Log, e env) bool {
	ok := true
	for _, l := range logs {
		if err := l.Close(); err != nil {
			fmt.Fprintf(e.stderr, "validate review: closing %s: %v\n", l.Path(), err)
			ok = false
		}
	}
	return ok
}

// openLogs opens the reviewer's log beside each corpus of c, saying so of
// a damaged last line cut off.
func openLogs(c *review.Corpus, reviewer string, e env) ([]*review.Log, error) {
	var logs []*review.Log
	for _, p := range c.Parts {
		l, err := review.OpenLog(review.LogPath(p.Paths[0], reviewer), reviewer, p.Fingerprint, p.Paths[0], time.Now())
		if err != nil {
			return logs, err
		}
		logs = append(logs, l)
		if n := l.Torn(); n > 0 {
			fmt.Fprintf(e.stderr, "validate review: %s: cut off a damaged last line (%d bytes: a decision being written when the page was stopped; it was not saved)\n", l.Path(), n)
		}
	}
	return logs, nil
}

// defaultReviewer is $USER when it can name a reviewer, else "reviewer".
func defaultReviewer(getenv func(string) string) string {
	if u := getenv("USER"); review.CheckReviewer(u) == nil {
		return u
	}
	return "reviewer"
}

// serveReview serves the page until ctx ends (Ctrl-C).
func serveReview(ctx context.Context, c *review.Corpus, logs []*review.Log, addr, token string, e env) int {
	if token == "" {
		var err error
		if token, err = page.RandomToken(); err != nil {
			fmt.Fprintf(e.stderr, "validate review: %v\n", err)
			return exitFailed
		}
	}
	loopback := page.IsLoopback(addr)
	h, err := page.New(page.Options{Corpus: c, Logs: logs, Token: token, Loopback: loopback, Logger: logger(e.stderr)})
	if err != nil {
		fmt.Fprintf(e.stderr, "validate review: %v\n", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) {
			host, _, _ := net.SplitHostPort(addr)
			hint = fmt.Sprintf("; another page or program holds the port: give another with --addr %s, or --addr %s to take a free one", net.JoinHostPort(host, "PORT"), net.JoinHostPort(host, "0"))
		}
		fmt.Fprintf(e.stderr, "validate review: %v%s\n", err, hint)
		return exitFailed
	}
	sess := h.Session()
	reviewed, total := sess.Progress()
	if c.Running {
		fmt.Fprintf(e.stderr, "validate review: a distill run is writing %s: reviewing a snapshot of the records committed so far\n", strings.Join(c.Paths, ", "))
	}
	what := fmt.Sprintf("%d records", c.Len())
	if c.Sample != nil {
		what = fmt.Sprintf("a random sample of %d of %d records (seed %d)", c.Len(), c.Total, c.Sample.Seed)
	}
	fmt.Fprintf(e.stderr, "validate review: %s, %d items (%d reviewed by %s)\n", what, total, reviewed, sess.Reviewer())
	for i, l := range logs {
		p := c.Parts[i]
		kind := ""
		if p.Grounded > 0 {
			kind = fmt.Sprintf(", %d grounded", p.Grounded)
		}
		fmt.Fprintf(e.stderr, "validate review: log %s (%d records of %s%s)\n", l.Path(), p.Records, strings.Join(p.Paths, ", "), kind)
	}
	for _, u := range pageURLs(ln.Addr().(*net.TCPAddr), token) {
		fmt.Fprintf(e.stderr, "validate review: open %s (Ctrl-C to stop)\n", u)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		if serr := <-done; err == nil { // http.ErrServerClosed once Shutdown has begun, passed over below
			err = serr
		}
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(e.stderr, "validate review: %v\n", err)
		return exitFailed
	}
	var paths []string
	for _, l := range logs {
		paths = append(paths, l.Path())
	}
	fmt.Fprintf(e.stderr, "validate review: stopped; every decision is in %s\n", strings.Join(paths, ", "))
	return exitOK
}

// pageURLs are the URLs to print for the page listening at a: its own
// address; for an unspecified one (0.0.0.0, ::), an address of this
// machine another machine can reach, then loopback's.
func pageURLs(a *net.TCPAddr, token string) []string {
	at := func(host string) string {
		return "http://" + net.JoinHostPort(host, strconv.Itoa(a.Port)) + "/?token=" + url.QueryEscape(token)
	}
	if !a.IP.IsUnspecified() {
		return []string{at(a.IP.String())}
	}
	var out []string
	if h := reachableHost(); h != "" {
		out = append(out, at(h))
	}
	return append(out, at("127.0.0.1"))
}

// reachableHost is an address of this machine that another machine can
// open: the first IPv4 address of an interface that is up and not
// loopback (else an IPv6 one that is not link-local), else its host name.
func reachableHost() string {
	var v6 string
	ifaces, _ := net.Interfaces()
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
			if v6 == "" {
				v6 = ipn.IP.String()
			}
		}
	}
	if v6 != "" {
		return v6
	}
	h, _ := os.Hostname()
	return h
}

// peopleReview reads the review logs beside the corpus at paths, when it
// has some: the report's review section, and (without a --human sheet)
// people's decisions as the labels the judge's rates are corrected
// against. A log it cannot use (another corpus's, damaged) is a warning
// on stderr and the rest of the audit stands.
func peopleReview(ctx context.Context, paths []string, opt *audit.Options, e env) *audit.PeopleReview {
	if len(paths) != 1 {
		return nil
	}
	logs, err := review.Logs(paths[0])
	if err != nil || len(logs) == 0 {
		return nil
	}
	in, err := audit.Open(paths...)
	if err == nil {
		var c *review.Corpus
		if c, err = review.Load(ctx, in); err == nil {
			defer func() { _ = c.Close() }() // the corpus was only read: closing loses nothing
			var d *review.Decisions
			if d, err = review.ReadDecisions(logs, c.Parts[0].Fingerprint); err == nil {
				if opt.HumanSheet == "" {
					if labels, disputed := review.Labels(d); len(labels) > 0 {
						opt.Human, opt.HumanSheet, opt.HumanFromReview, opt.Disputed = labels, strings.Join(logs, ", "), true, disputed
					}
				}
				return review.Summarize(c, d)
			}
		}
	}
	fmt.Fprintf(e.stderr, "validate: the review logs in %s were not read: %v\n", review.Dir(paths[0]), err)
	return nil
}
