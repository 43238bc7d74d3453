package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/review/page"
)

const reviewUsage = `Usage: validate review CORPUS [--addr 127.0.0.1:PORT] [--reviewer NAME]

Serves a local web page where a person reviews the corpus's rubric items,
one record at a time: the problem, the ground truth, a few rollouts, and
every item with its type, weight, the validity judge's verdict and reason
and the measured figures (satisfaction rate, correlation, edge). Per item:
accept, reject (with an optional reason) or edit its text, type and weight;
per record: skip or flag. The queue puts first the records whose items are
most likely wrong (the judge and the empirical figures disagree, either
says invalid, a low edge). Keys: j/k move, a/r/e decide, u undoes, ? lists
them all.

Every decision is written at once to the reviewer's log,
CORPUS/review/NAME.jsonl (RUN/review for a run's shard file, review/ beside
any other file: the first, when several make the corpus), never among the
corpus's shards; a killed page loses at most the decision being written. Several
reviewers review the same corpus at once, each with their own --reviewer.
A corpus a running distill run is writing is reviewed as a snapshot (the
page says so). validate CORPUS then reports coverage and agreement, and
distill export --review CORPUS/review/*.jsonl applies the decisions.

The page binds 127.0.0.1 by default. Bound to another address it asks for
an access token: a random one printed in the URL on stderr, or the value of
the variable --token-env names.

Examples:
  validate review runs/demo
  validate review runs/demo --reviewer alice --addr 127.0.0.1:8765
  validate review exports/demo-jsonl --reviewer bob --addr 127.0.0.1:8766
`

func reviewCmd(ctx context.Context, args []string, e env) int {
	fs := newFlags("validate review", reviewUsage, e)
	addr := fs.String("addr", "127.0.0.1:8765", "address to serve the page on; e.g. --addr 127.0.0.1:9000 (another interface asks for a token)")
	reviewer := fs.String("reviewer", "", "your name, which names your log: letters, digits, '.', '_', '-' (default: $USER when it is such a name); e.g. --reviewer alice")
	tokenEnv := fs.String("token-env", "", "name of an environment variable holding the access token asked for when --addr is not loopback (default: a random token, printed in the URL); e.g. --token-env REVIEW_TOKEN")
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
	in, code, ok := openCorpus("validate review", paths, e)
	if !ok {
		return code
	}
	c, err := review.Load(ctx, in)
	if err != nil {
		fmt.Fprintf(e.stderr, "validate review: %v\n", err)
		return exitFailed
	}
	if len(c.Records) == 0 {
		fmt.Fprintf(e.stderr, "validate review: %s holds no record to review (%d grounded records are not shown)\n", paths[0], c.Grounded)
		return exitFailed
	}
	log, err := review.OpenLog(review.LogPath(paths[0], *reviewer), *reviewer, c.Fingerprint, paths[0], time.Now())
	if err != nil {
		fmt.Fprintf(e.stderr, "validate review: %v\n", err)
		return exitFailed
	}
	code = serveReview(ctx, c, log, *addr, token, e)
	if err := log.Close(); err != nil && code == exitOK { // every decision was synced as it came; say so anyway
		fmt.Fprintf(e.stderr, "validate review: closing %s: %v\n", log.Path(), err)
		return exitFailed
	}
	return code
}

// defaultReviewer is $USER when it can name a reviewer, else "reviewer".
func defaultReviewer(getenv func(string) string) string {
	if u := getenv("USER"); review.CheckReviewer(u) == nil {
		return u
	}
	return "reviewer"
}

// serveReview serves the page until ctx ends (Ctrl-C).
func serveReview(ctx context.Context, c *review.Corpus, log *review.Log, addr, token string, e env) int {
	loopback := page.IsLoopback(addr)
	if !loopback && token == "" {
		var err error
		if token, err = page.RandomToken(); err != nil {
			fmt.Fprintf(e.stderr, "validate review: %v\n", err)
			return exitFailed
		}
	}
	if loopback {
		token = ""
	}
	h, err := page.New(page.Options{Corpus: c, Log: log, Token: token, Loopback: loopback, Logger: logger(e.stderr)})
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
	url := "http://" + ln.Addr().String() + "/"
	if token != "" {
		url += "?token=" + token
	}
	reviewed, total := review.Progress(c, review.Replay(log.Header().Reviewer, log.Entries()))
	if c.Running {
		fmt.Fprintf(e.stderr, "validate review: a distill run is writing %s: reviewing a snapshot of the %d records committed so far\n", c.Paths[0], len(c.Records))
	}
	fmt.Fprintf(e.stderr, "validate review: %d records, %d items (%d reviewed by %s); log %s\n", len(c.Records), total, reviewed, log.Header().Reviewer, log.Path())
	fmt.Fprintf(e.stderr, "validate review: open %s (Ctrl-C to stop)\n", url)
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
	fmt.Fprintf(e.stderr, "validate review: stopped; every decision is in %s\n", log.Path())
	return exitOK
}

// reviewSection prints, after the text report, the review of the corpus
// at paths when it has review logs: coverage and agreement. A log it
// cannot use (another corpus's, damaged) is a warning on stderr.
func reviewSection(ctx context.Context, paths []string, e env) {
	if len(paths) != 1 {
		return
	}
	logs, err := review.Logs(paths[0])
	if err != nil || len(logs) == 0 {
		return
	}
	if err := writeReviewSection(ctx, paths, logs, e); err != nil {
		fmt.Fprintf(e.stderr, "validate: the review logs in %s were not read: %v\n", review.Dir(paths[0]), err)
	}
}

func writeReviewSection(ctx context.Context, paths, logs []string, e env) error {
	in, err := audit.Open(paths...)
	if err != nil {
		return err
	}
	c, err := review.Load(ctx, in)
	if err != nil {
		return err
	}
	d, err := review.ReadDecisions(logs, c.Fingerprint)
	if err != nil {
		return err
	}
	return review.Summarize(c, d).WriteText(e.stdout)
}
