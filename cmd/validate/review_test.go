package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
)

// TestValidateReportsTheReview: once review logs sit beside the corpus,
// validate's text report ends with their coverage and kappa; a log of
// another corpus is refused by validate review and named by validate.
func TestValidateReportsTheReview(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 2); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runValidate([]string{run}, &stdout, &stderr); code != exitOK || strings.Contains(stdout.String(), "People's review") {
		t.Fatalf("without logs: exit %d, review section shown %v\n%s", code, strings.Contains(stdout.String(), "People's review"), stderr.String())
	}

	// The judge says item 3 of r00 is invalid; alice rejects it and accepts
	// the other four items of r00.
	path := review.LogPath(run, "alice")
	in := mustFingerprint(t, run)
	l, err := review.OpenLog(path, "alice", in, run, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := reviewtest.Records(1)
	for _, it := range recs[0].Rubric {
		action := review.ActionAccept
		if it.ID == 3 {
			action = review.ActionReject
		}
		if _, err := l.Append(review.Entry{Time: time.Now(), Record: "r00", Item: it.ID, Action: action,
			Before: &review.ItemState{Type: it.Type, Text: it.Text, Weight: it.Weight}}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	stdout.Reset()
	if code := runValidate([]string{run}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"People's review", "coverage: 5 of 10 items decided (50.0%)", "stored judge / alice", "1.00 (almost perfect)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout.String())
		}
	}

	// A log written for another corpus.
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte(in), []byte("ffffffffffffffff"), 1)
	os.WriteFile(path, data, 0o644)
	stderr.Reset()
	code := runValidate([]string{"review", run, "--reviewer", "alice", "--addr", "127.0.0.1:0"}, &stdout, &stderr)
	if code != exitFailed || !strings.Contains(stderr.String(), "was written for the corpus with fingerprint ffffffffffffffff") {
		t.Fatalf("validate review on another corpus's log: exit %d\n%s", code, stderr.String())
	}
	stderr.Reset()
	runValidate([]string{run}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "belongs to another corpus") {
		t.Fatalf("validate said nothing of the foreign log:\n%s", stderr.String())
	}
}

func runValidate(args []string, stdout, stderr *bytes.Buffer) int {
	return run(args, stdout, stderr, func(string) string { return "" })
}

func mustFingerprint(t *testing.T, run string) string {
	t.Helper()
	in, code, ok := openCorpus("test", []string{run}, env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	if !ok {
		t.Fatalf("exit %d", code)
	}
	fp, err := review.Fingerprint(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// TestReviewAccess: the page asks for its token on loopback too, and
// prints it in the URL; bound to 0.0.0.0 it prints a URL another machine
// can open (not http://[::]:PORT); the log is readable by its owner only;
// a damaged last line cut off at the start is reported; -h says what a
// review covers.
func TestReviewAccess(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 2); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		srv := startReview(t, run, "--reviewer", "alice", "--addr", addr)
		u, err := url.Parse(srv.URL)
		if err != nil || u.Query().Get("token") == "" {
			t.Fatalf("--addr %s: the URL %s carries no token", addr, srv.URL)
		}
		if h := u.Hostname(); h == "::" || h == "0.0.0.0" || (addr == "0.0.0.0:0" && net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback()) {
			t.Fatalf("--addr %s printed %s, which another machine cannot open", addr, srv.URL)
		}
		bare := *u
		bare.RawQuery = ""
		if res, err := http.Get(bare.String()); err != nil || res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("--addr %s: GET without the token: %v %v", addr, res, err)
		}
		if res, err := http.Get(srv.URL); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("--addr %s: GET with the token: %v %v", addr, res, err)
		}
		srv.kill()
	}
	st, err := os.Stat(review.LogPath(run, "alice"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the log's mode: %v, %v; want 0600", st, err)
	}
	f, _ := os.OpenFile(review.LogPath(run, "alice"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":1,"record":"r0`)
	f.Close()
	srv := startReview(t, run, "--reviewer", "alice", "--addr", "127.0.0.1:0")
	if said := srv.stderr.String(); !strings.Contains(said, "cut off a damaged last line") {
		t.Fatalf("validate review said nothing of the damaged last line: %s", said)
	}
	srv.kill()
	var stderr bytes.Buffer
	runValidate([]string{"review", "-h"}, &bytes.Buffer{}, &stderr)
	for _, want := range []string{"grounded", "--sample", "token"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("validate review -h does not say %q:\n%s", want, stderr.String())
		}
	}
}

// TestReviewMixedCorpus: reviewing a grounded and a math run together
// opens a log beside each, and grounded corpora are not refused.
func TestReviewMixedCorpus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	grounded, math := filepath.Join(dir, "grounded"), filepath.Join(dir, "math")
	if err := reviewtest.GroundedRun(grounded, 2); err != nil {
		t.Fatal(err)
	}
	if err := reviewtest.DemoRun(math, 2); err != nil {
		t.Fatal(err)
	}
	srv := startReview(t, grounded, math, "--reviewer", "alice", "--addr", "127.0.0.1:0")
	said := srv.stderr.String()
	srv.kill()
	for _, p := range []string{grounded, math} {
		if _, err := os.Stat(review.LogPath(p, "alice")); err != nil || !strings.Contains(said, review.LogPath(p, "alice")) {
			t.Errorf("no log beside %s (%v); validate review said: %s", p, err, said)
		}
	}
}

// TestReviewFeedsTheFigures: the review section is in --json and --html
// too, naming the flagged records; people's decisions are the human
// labels of the judge-reliability section (a reviewer's accept is valid,
// a reject or an edit not valid as written); an item two reviewers
// decided differently is left out and counted.
func TestReviewFeedsTheFigures(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 4); err != nil {
		t.Fatal(err)
	}
	fp := mustFingerprint(t, run)
	recs, _ := reviewtest.Records(4)
	write := func(who string, decide func(rec string, it int32) string) {
		l, err := review.OpenLog(review.LogPath(run, who), who, fp, run, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for _, r := range recs {
			for _, it := range r.Rubric {
				act := decide(r.ID, it.ID)
				if act == "" {
					continue
				}
				if _, err := l.Append(review.Entry{Time: time.Now(), Record: r.ID, Item: it.ID, Action: act,
					Before: &review.ItemState{Type: it.Type, Text: it.Text, Weight: it.Weight}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if who == "alice" {
			l.Append(review.Entry{Time: time.Now(), Record: "r03", Action: review.ActionFlag, Reason: "odd answer"})
		}
	}
	// alice rejects the judge-invalid PITFALLs (item 3 of r00 and r02) and
	// accepts the rest; bob accepts item 3 of r00 (a dispute) and nothing else.
	write("alice", func(rec string, it int32) string {
		if it == 3 && (rec == "r00" || rec == "r02") {
			return review.ActionReject
		}
		return review.ActionAccept
	})
	write("bob", func(rec string, it int32) string {
		if rec == "r00" && it == 3 {
			return review.ActionAccept
		}
		return ""
	})
	var stdout, stderr bytes.Buffer
	html := filepath.Join(t.TempDir(), "audit.html")
	if code := runValidate([]string{run, "--json", "--html", html}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var rep struct {
		Review *struct {
			Covered int `json:"covered"`
			Flagged []struct {
				Record, Reviewer, Reason string
			} `json:"flagged"`
		} `json:"review"`
		Reliability struct {
			Labels   *string `json:"labels"`
			Disputed *int    `json:"disputed"`
			Method   string  `json:"method"`
			Overall  struct {
				Labelled *int64 `json:"labelled"`
			} `json:"overall"`
		} `json:"reliability"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Review == nil || rep.Review.Covered != 20 || len(rep.Review.Flagged) != 1 || rep.Review.Flagged[0].Record != "r03" {
		t.Fatalf("--json's review section: %+v", rep.Review)
	}
	rel := rep.Reliability
	if rel.Labels == nil || *rel.Labels != "review" || rel.Method != "rogan-gladen" || rel.Disputed == nil || *rel.Disputed != 1 ||
		rel.Overall.Labelled == nil || *rel.Overall.Labelled != 19 {
		t.Fatalf("reliability: labels %v, method %s, disputed %v, labelled %v; want the 19 undisputed decisions as labels",
			rel.Labels, rel.Method, rel.Disputed, rel.Overall.Labelled)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"People's review", "r03", "odd answer", "people's labels from the review"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	stdout.Reset()
	runValidate([]string{run}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "people's labels from the review logs") || !strings.Contains(stdout.String(), "flagged: r03 (alice: odd answer)") {
		t.Fatalf("the text report:\n%s", stdout.String())
	}
}

// TestSampleGroundedCriteria: validate sample draws a grounded corpus's
// judged criteria (it said "0 judged items" of one), each with its
// question and passage, and validate agreement compares people's labels
// of them with the judge's.
func TestSampleGroundedCriteria(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "grounded")
	if err := reviewtest.GroundedRun(run, 3); err != nil {
		t.Fatal(err)
	}
	sheet := filepath.Join(t.TempDir(), "criteria.csv")
	var stdout, stderr bytes.Buffer
	if code := runValidate([]string{"sample", run, "--n", "8", "--seed", "2", "--out", sheet}, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stderr.String(), "drew 8 of 18 judged items") {
		t.Fatalf("sample: exit %d: %s", code, stderr.String())
	}
	f, _ := os.Open(sheet)
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 9 {
		t.Fatalf("the sheet: %d rows, %v", len(rows), err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	for _, row := range rows[1:] {
		if row[col("type")] != "criterion" || !strings.Contains(row[col("record_id")], "-q") || !strings.HasPrefix(row[col("ground_truth")], "Passage ") {
			t.Fatalf("a criterion's row: %q", row)
		}
		row[col("human_valid")] = "valid"
	}
	f, _ = os.Create(sheet)
	csv.NewWriter(f).WriteAll(rows)
	f.Close()
	stdout.Reset()
	stderr.Reset()
	if code := runValidate([]string{"agreement", run, "--human", sheet, "--json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("agreement: exit %d: %s", code, stderr.String())
	}
	var rep struct {
		Agreement struct {
			Items int64 `json:"items"`
		} `json:"agreement"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Agreement.Items != 8 {
		t.Fatalf("agreement compared %d criteria (%v): %s", rep.Agreement.Items, err, stdout.String())
	}
}
