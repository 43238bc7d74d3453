package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
)

// childArgs, when set in the environment, makes the test binary run
// validate with these arguments (separated by \x1f) instead of the tests: the
// browser test's server is a real process it can kill.
const childArgs = "VALIDATE_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgs); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}

// reviewServer is `validate review` running as a child process.
type reviewServer struct {
	cmd *exec.Cmd
	URL string
}

var openLine = regexp.MustCompile(`open (http://\S+)`)

// startReview starts `validate review args...` and waits for its URL.
func startReview(t *testing.T, args ...string) *reviewServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgs+"="+strings.Join(append([]string{"review"}, args...), "\x1f"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &reviewServer{cmd: cmd}
	t.Cleanup(s.kill)
	found := make(chan string, 1)
	go func() { // owned by the child: ends when its stderr closes
		sc := bufio.NewScanner(stderr)
		var said []string
		for sc.Scan() {
			said = append(said, sc.Text())
			if m := openLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		found <- "exited: " + strings.Join(said, " | ")
	}()
	select {
	case u := <-found:
		if !strings.HasPrefix(u, "http://") {
			t.Fatalf("validate review did not start: %s", u)
		}
		s.URL = u
	case <-time.After(20 * time.Second):
		t.Fatal("validate review printed no URL in 20s")
	}
	return s
}

// kill ends the server as a crash would: SIGKILL, no shutdown.
func (s *reviewServer) kill() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

// browser is a headless Chromium: Debian's chromium package (.ci/run
// installs it). A machine without it fails the test, unless RF_SKIP_BROWSER
// asks to skip it (make test RF_SKIP_BROWSER=1, which then fails saying so).
func browser(t *testing.T) context.Context {
	t.Helper()
	if os.Getenv("RF_SKIP_BROWSER") != "" {
		t.Skip("RF_SKIP_BROWSER is set: the review page's browser test is not run (make test ends saying so, with exit 1)")
	}
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("no chromium on PATH: the review page's browser test needs it (apt-get install -y chromium; .ci/run installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// press types keys to the page, as a person at the keyboard does.
func press(keys string) chromedp.Action[chromedp.Void] { return chromedp.KeyEvent(keys) }

// focused waits until the element sel selects has the keyboard focus.
func focused(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		js := fmt.Sprintf("!!(document.activeElement && document.activeElement.matches(%q))", sel)
		for {
			ok, err := chromedp.Evaluate[bool](js)(ctx, t)
			if err == nil && ok {
				return chromedp.Void{}, nil
			}
			where, _ := chromedp.Evaluate[string]("location.href + ' focus: ' + (document.activeElement ? document.activeElement.outerHTML.slice(0, 80) : 'none')")(ctx, t)
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for %s to have the focus (%s): %w", sel, where, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// decided waits until item id of the shown record shows decision class.
func decided(id, class string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(`#item-` + id + `.decided.` + class))
}

// rejectReason is the reason typed for the rejection.
const rejectReason = "too vague to check"

// TestReviewPageInBrowser reviews three items of a demo-like corpus by
// keyboard alone in a real headless Chromium (accept, reject with a
// reason, edit the text), reloads and sees them, sees an edit that empties
// an item refused with a message, kills the server while a
// fourth decision is on its way and restarts it with the three intact,
// flags, undoes and skips a record, then exports with the log and finds the edit in the exported parquet,
// the rejected item gone, and rewardd scoring with the edited rubric.
func TestReviewPageInBrowser(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := reviewtest.DemoRun(run, 6); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	srv := startReview(t, run, "--reviewer", "alice", "--addr", "127.0.0.1:0")

	const edited = "Names the binomial coefficient and says why order does not matter."
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), focused(`#item-1`)); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`body`), "data-record"))
	first := attr.Value
	if err != nil || first == "" {
		t.Fatalf("the page names no record: %v", err)
	}
	err = chromedp.Do(ctx,
		press("a"), decided("1", "accept"),
		focused(`#item-2`), press("r"), focused(`#item-2 .reason-input`),
		press(rejectReason+kb.Enter), decided("2", "reject"),
		focused(`#item-3`), press("e"), focused(`#item-3 .text-input`),
		press(edited+kb.Enter), decided("3", "edit"),
	)
	if err != nil {
		t.Fatalf("reviewing by keyboard: %v", err)
	}
	checkShown(t, ctx, edited)
	screenshot(t, ctx)

	// An edit that empties the text is refused on the page, with a
	// message, and nothing is logged.
	err = chromedp.Do(ctx, focused(`#item-4`), press("e"), focused(`#item-4 .text-input`),
		press(kb.Backspace+kb.Enter), chromedp.WaitVisible(chromedp.CSS(`#item-4 .error`)))
	if err != nil {
		t.Fatalf("an empty edit: %v", err)
	}
	if msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#item-4 .error`))); err != nil || !strings.Contains(msg, "Not saved: text is blank") {
		t.Fatalf("the page's message on an empty edit: %q, %v", msg, err)
	}
	if n := len(readLog(t, run)); n != 3 {
		t.Fatalf("the refused edit left the log with %d entries, want 3", n)
	}

	// A fourth decision goes out and the server is killed at once: the
	// three before it are kept whatever became of it.
	if err := chromedp.Do(ctx, press(kb.Escape), focused(`#item-4`), press("a")); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	checkLog(t, run, edited)
	srv = startReview(t, run, "--reviewer", "alice", "--addr", "127.0.0.1:0")
	if err := doNavigation(ctx, chromedp.Navigate(srv.URL+"?rec="+first)); err != nil {
		t.Fatal(err)
	}
	checkShown(t, ctx, edited)
	recordKeys(t, ctx, first)
	srv.kill()

	exportReviewed(t, run, first, edited)
}

// recordKeys flags the record (f), undoes that (u), and skips it (s): the
// next record takes its place.
func recordKeys(t *testing.T, ctx context.Context, first string) {
	t.Helper()
	err := chromedp.Do(ctx, focused(`.item`), press("f"), chromedp.WaitVisible(chromedp.CSS(`.badge.flag`)),
		focused(`.item`), press("u"), chromedp.WaitNotPresent(chromedp.CSS(`.badge.flag`)),
		focused(`.item`), press("s"), chromedp.WaitNotPresent(chromedp.CSS(`body[data-record="`+first+`"]`)), focused(`.item`))
	if err != nil {
		t.Fatalf("flag, undo, skip: %v", err)
	}
}

// doNavigation runs a navigation and what follows it, again when Chromium
// dropped the navigation because the page was already leaving: after the
// server was killed the page's own script reloads it when its last
// decision fails ("net::ERR_ABORTED"), and a reload right after a
// navigation can reach a page being detached ("Not attached to an active
// page"). Those are the browser's protocol, not the page under test.
func doNavigation(ctx context.Context, actions ...chromedp.Action[chromedp.Void]) error {
	var err error
	for range 3 {
		err = chromedp.Do(ctx, actions...)
		if err == nil || !(strings.Contains(err.Error(), "Not attached to an active page") || strings.Contains(err.Error(), "net::ERR_ABORTED")) {
			return err
		}
	}
	return err
}

// checkShown reloads the page and checks that it shows the three decisions.
func checkShown(t *testing.T, ctx context.Context, edited string) {
	t.Helper()
	if err := doNavigation(ctx, chromedp.Reload(), decided("1", "accept"), decided("2", "reject"), decided("3", "edit")); err != nil {
		t.Fatalf("after a reload: %v", err)
	}
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	text1, reason, text3 := text(`#item-1 .status`), text(`#item-2 .status .dim`), text(`#item-3 .text.edited`)
	if !strings.Contains(text1, "accepted") || reason != "“"+rejectReason+"”" || !strings.HasPrefix(text3, edited+" (") {
		t.Fatalf("after a reload the page shows %q, %q, %q", text1, reason, text3)
	}
}

// screenshot checks the page's picture and, with -update, writes it to
// docs/review.png.
func screenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width < 1000 || cfg.Height < 600 {
		t.Fatalf("the screenshot is not a laptop-sized PNG: %v %+v", err, cfg)
	}
	if golden.Updating() {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "review.png"), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLog checks the three decisions in alice's log, word for word.
func checkLog(t *testing.T, run, edited string) {
	t.Helper()
	entries := readLog(t, run)
	if len(entries) < 3 || len(entries) > 4 {
		t.Fatalf("the log holds %d entries after three decisions and a fourth cut short: %+v", len(entries), entries)
	}
	got := []string{entries[0].Action, entries[1].Action + " " + entries[1].Reason, entries[2].Action + " " + entries[2].After.Text}
	want := []string{review.ActionAccept, review.ActionReject + " " + rejectReason, review.ActionEdit + " " + edited}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the log says %q, want %q", got, want)
	}
}

// readLog reads alice's log of run.
func readLog(t *testing.T, run string) []review.Entry {
	t.Helper()
	_, entries, err := review.ReadLog(review.LogPath(run, "alice"), "")
	if err != nil {
		t.Fatal(err)
	}
	return entries
}
