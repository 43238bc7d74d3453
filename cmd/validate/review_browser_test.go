//go:build browser

package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
)

// browsers are the names newBrowser looks for on PATH, in this order.
// Chromium's headless shell comes first: the same Blink, V8 and network
// stack as the full browser, without the browser's own layer (profile
// services, window and UI code), which this test does not exercise; it
// takes half the CPU of the full browser in headless mode (the whole
// test: 47 -> 22 CPU-s). Debian's package is chromium-headless-shell
// (.ci/run installs it), Chrome for Testing's chrome-headless-shell.
var browsers = []string{"chromium-headless-shell", "chrome-headless-shell", "chromium", "chromium-browser", "google-chrome"}

// browserPath is the browser the test drives: RF_BROWSER (a name on PATH
// or a path) when it is set, say to check the page in the full browser
// (RF_BROWSER=chromium), else the first of browsers on PATH.
func browserPath(t *testing.T) string {
	t.Helper()
	if name := os.Getenv("RF_BROWSER"); name != "" {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("RF_BROWSER=%s: %v", name, err)
		}
		return p
	}
	for _, name := range browsers {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium on PATH (%s): the review page's browser test needs one (apt-get install -y chromium-headless-shell; .ci/run installs it)", strings.Join(browsers, ", "))
	return ""
}

// newBrowser starts one headless Chromium for all the subtests (see
// browsers). A machine without one fails the test: it is not skipped.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if os.Getenv("RF_SKIP_BROWSER") != "" {
		t.Skip("RF_SKIP_BROWSER is set: the review page's browser test is not run (make test ends saying so, with exit 1)")
	}
	path := browserPath(t)
	t.Logf("browser: %s", path)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// newTab opens a tab of the browser for one subtest.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	ctx, cancel2 := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel2)
	return ctx
}

// press types keys to the page, as a person at the keyboard does.
func press(keys string) chromedp.Action[chromedp.Void] { return chromedp.KeyEvent(keys) }

// until waits until the page's expression js is true (the page's state,
// polled), saying what the page showed when it never was.
func until(js string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			ok, err := chromedp.Evaluate[bool]("!!("+js+")")(ctx, t)
			if err == nil && ok {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				where, _ := chromedp.Evaluate[string]("location.href + ' focus: ' + (document.activeElement ? document.activeElement.outerHTML.slice(0, 120) : 'none') + ' message: ' + (document.getElementById('message') || {}).textContent")(wctx, t)
				cancel()
				return chromedp.Void{}, fmt.Errorf("waiting for %s (%s): %w", js, where, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// focused waits until the element sel selects has the keyboard focus.
func focused(sel string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf("document.activeElement && document.activeElement.matches(%q)", sel))
}

// settled waits until the page has sent every decision and shows a record.
func settled() chromedp.Action[chromedp.Void] {
	return until(`document.body.dataset.outbox === "0" && document.body.dataset.loading !== "1" && document.body.dataset.record`)
}

// showing waits until the page shows record id.
func showing(id string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`document.body.dataset.record === %q && document.body.dataset.loading !== "1"`, id))
}

// decided waits until item sel of the shown record shows decision class.
func decided(id, class string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(`#item-` + id + `.decided.` + class + `:not(.pending)`))
}

// text is the text of the element sel selects.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// shownRecord is the id of the record the page shows.
func shownRecord(t *testing.T, ctx context.Context) string {
	t.Helper()
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.dataset.record"))
	if err != nil || id == "" {
		t.Fatalf("the page names no record: %v", err)
	}
	return id
}

// rejectReason is the reason typed for the rejection.
const rejectReason = "too vague to check"

// TestReviewPageInBrowser drives the review page in one real headless
// Chromium, each subtest in its own tab and with its own `validate review`
// process, by keyboard as a person would (and once by mouse).
func TestReviewPageInBrowser(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	t.Run("keyboard review, reload, kill, export", func(t *testing.T) { keyboardReview(t, browser) })
	t.Run("ten quick keys are ten decisions in order", func(t *testing.T) { rapidKeys(t, browser) })
	t.Run("two tabs", func(t *testing.T) { twoTabs(t, browser) })
	t.Run("undo across records", func(t *testing.T) { undoAcrossRecords(t, browser) })
	t.Run("a view drawn before an undo", func(t *testing.T) { viewBeforeUndo(t, browser) })
	t.Run("going back needs no fetch", func(t *testing.T) { backWithoutFetch(t, browser) })
	t.Run("focus stays clear of the header", func(t *testing.T) { focusClearOfHeader(t, browser) })
	t.Run("re-editing starts from the edit", func(t *testing.T) { reEdit(t, browser) })
	t.Run("flags", func(t *testing.T) { flags(t, browser) })
	t.Run("help, buttons and hints", func(t *testing.T) { helpButtonsHints(t, browser) })
	t.Run("grounded review to the export", func(t *testing.T) { groundedReview(t, browser) })
}

// demo writes a demo-like run of n records and starts alice's page on it.
func demo(t *testing.T, n int, extra ...string) (run string, srv *reviewServer) {
	t.Helper()
	run = filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, n); err != nil {
		t.Fatal(err)
	}
	return run, startReview(t, append([]string{run, "--reviewer", "alice", "--addr", "127.0.0.1:0"}, extra...)...)
}

// keyboardReview reviews three items by keyboard alone (accept, reject
// with a reason, edit the text), reloads and sees them, sees an edit that
// empties an item refused with a message, kills the server while a fourth
// decision is on its way and restarts it with the three intact, flags,
// undoes and skips a record, then exports with the log and finds the edit
// in the exported parquet and the rejected item gone.
func keyboardReview(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run, srv := demo(t, 6)
	const edited = "Names the binomial coefficient and says why order does not matter."
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), settled(), focused(`#item-1`)); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	first := shownRecord(t, ctx)
	err := chromedp.Do(ctx,
		press("a"), decided("1", "accept"),
		focused(`#item-2`), press("r"), focused(`#item-2 .reason-input`),
		press(rejectReason+kb.Enter), decided("2", "reject"),
		focused(`#item-3`), press("e"), focused(`#item-3 .text-input`),
		press(edited+kb.Enter), decided("3", "edit"), // the form opens with the text selected: typing replaces it
	)
	if err != nil {
		t.Fatalf("reviewing by keyboard: %v", err)
	}
	checkShown(t, ctx, edited)
	screenshot(t, ctx)

	// An edit that empties the text is refused with a message, on the
	// item, and nothing is logged.
	err = chromedp.Do(ctx, focused(`#item-4`), press("e"), focused(`#item-4 .text-input`), press(kb.Backspace+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#item-4 .error`)))
	if err != nil {
		t.Fatalf("an empty edit: %v", err)
	}
	if msg := text(t, ctx, `#item-4 .error`); !strings.Contains(msg, "Not saved: the text is blank") && !strings.Contains(msg, "Not saved: text is blank") {
		t.Fatalf("the page's message on an empty edit: %q", msg)
	}
	if n := len(readLog(t, run)); n != 3 {
		t.Fatalf("the refused edit left the log with %d entries, want 3", n)
	}

	// A fourth decision goes out and the server is killed at once: the
	// three before it are kept whatever became of it, and the page says
	// the decision was not saved.
	if err := chromedp.Do(ctx, press(kb.Escape), focused(`#item-4`), press("a")); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	checkLog(t, run, edited)
	srv = startReview(t, run, "--reviewer", "alice", "--addr", "127.0.0.1:0")
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.at("rec="+first)), showing(first)); err != nil {
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
	err := chromedp.Do(ctx, settled(), focused(`.item`), press("f"), chromedp.WaitVisible(chromedp.CSS(`.badge.flag:not(.pending)`)),
		settled(), press("u"), chromedp.WaitNotPresent(chromedp.CSS(`.badge.flag`)), settled(),
		press("s"), until(fmt.Sprintf(`document.body.dataset.record !== %q`, first)), settled(), focused(`.item`))
	if err != nil {
		t.Fatalf("flag, undo, skip: %v", err)
	}
}

// checkShown reloads the page and checks that it shows the three decisions.
func checkShown(t *testing.T, ctx context.Context, edited string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Reload(), settled(), decided("1", "accept"), decided("2", "reject"), decided("3", "edit")); err != nil {
		t.Fatalf("after a reload: %v", err)
	}
	text1, reason, text3 := text(t, ctx, `#item-1 .status`), text(t, ctx, `#item-2 .status .dim`), text(t, ctx, `#item-3 .text.edited`)
	if !strings.Contains(text1, "accepted") || reason != "“"+rejectReason+"”" || text3 != edited {
		t.Fatalf("after a reload the page shows %q, %q, %q", text1, reason, text3)
	}
}

// rapidKeys presses a ten times, 50 ms apart, across the end of a record:
// the log holds ten accepts, of the ten items shown, in order, each once.
func rapidKeys(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run, srv := demo(t, 6)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), settled(), focused(`#item-1`), until(`document.body.dataset.nextReady === "1"`)); err != nil {
		t.Fatal(err)
	}
	first := shownRecord(t, ctx)
	next, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.dataset.next"))
	for i := range 10 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond) // the reviewer's pace, not a wait for the page
		}
		if err := chromedp.Do(ctx, press("a")); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, settled()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range readLog(t, run) {
		got = append(got, fmt.Sprintf("%s %s #%d", e.Action, e.Record, e.Item))
	}
	var want []string
	for _, rec := range []string{first, next} {
		for item := 1; item <= 5; item++ {
			want = append(want, fmt.Sprintf("accept %s #%d", rec, item))
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ten quick a's logged\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	logTimings(t, ctx)
	// The tenth accept moved on to the third record; a reload shows it
	// again, and the record before it its five accepts.
	third := shownRecord(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Reload(), showing(third), settled(), press("p"), showing(next), decided("5", "accept")); err != nil {
		t.Fatalf("after a reload: %v", err)
	}
}

// logTimings logs how long the page took from a key to its update on the
// screen, and to the server's answer (window.reviewTimings).
func logTimings(t *testing.T, ctx context.Context) {
	t.Helper()
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64]("window.reviewTimings.map(x => x.shown)"))
	if err != nil {
		t.Fatal(err)
	}
	saved, _ := chromedp.Run(ctx, chromedp.Evaluate[[]float64]("window.reviewTimings.filter(x => x.saved != null).map(x => x.saved)"))
	most := func(xs []float64) float64 {
		m := 0.0
		for _, x := range xs {
			m = max(m, x)
		}
		return m
	}
	t.Logf("%d keys: at most %.1f ms to the screen, %.1f ms to the log (a shared machine; the scale figures are internal/bench/review's)", len(shown), most(shown), most(saved))
}

// twoTabs: a decision made in a tab that shows an item as it was before
// another tab decided it is refused on the page, which then shows what the
// log holds; the log holds one decision.
func twoTabs(t *testing.T, browser context.Context) {
	a, b := newTab(t, browser), newTab(t, browser)
	run, srv := demo(t, 3)
	for _, ctx := range []context.Context{a, b} {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.at("rec=r01")), showing("r01"), focused(`#item-1`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(a, press("a"), decided("1", "accept"), settled()); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(b, press("r"), focused(`#item-1 .reason-input`), press("stale"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#item-1.refused .error`)), decided("1", "accept"), settled())
	if err != nil {
		t.Fatalf("the second tab's stale reject: %v", err)
	}
	if msg := text(t, b, `#item-1 .error`); !strings.Contains(msg, "accept stands on item #1 of record r01") {
		t.Fatalf("the refusal says %q", msg)
	}
	if es := readLog(t, run); len(es) != 1 || es[0].Action != review.ActionAccept {
		t.Fatalf("the log holds %+v; want the one accept", es)
	}
	// Undo in the second tab takes back only what that tab did: nothing.
	if err := chromedp.Do(b, press("u"), until(`document.getElementById("message").textContent.includes("Nothing to undo in this tab")`)); err != nil {
		t.Fatal(err)
	}
}

// undoAcrossRecords: after the last item of a record the page goes on to
// the next; u then takes back that last decision, goes back to its record
// and says so.
func undoAcrossRecords(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run, srv := demo(t, 3)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), settled(), focused(`#item-1`)); err != nil {
		t.Fatal(err)
	}
	first := shownRecord(t, ctx)
	err := chromedp.Do(ctx, press("j"), press("j"), press("j"), press("j"), focused(`#item-5`), press("a"),
		until(fmt.Sprintf(`document.body.dataset.record !== %q`, first)), settled(), press("u"), showing(first), settled(),
		until(`document.querySelector("#item-5 .badge.open")`))
	if err != nil {
		t.Fatal(err)
	}
	msg := text(t, ctx, `#message`)
	if !strings.Contains(msg, "Undid the accept of item #5 of record "+first) || !strings.Contains(msg, "back on record "+first) {
		t.Fatalf("the undo says %q", msg)
	}
	es := readLog(t, run)
	if len(es) != 2 || es[1].Action != review.ActionUndo || es[1].Undoes != es[0].Seq {
		t.Fatalf("the log: %+v", es)
	}
}

// slowNetwork replaces the page's fetch to give an order a loaded machine
// can give: the accept's answer reaches the page after it has asked for the
// view of record %[1]q (the neighbour fetched before it is asked for); when
// u then asks for that view again, the server draws it before it logs the
// undo, and the page receives it only after it has said what the undo
// undid.
const slowNetwork = `(() => {
	const real = window.fetch;
	const rec = /[?&]rec=%[1]s(&|$)/;
	let views = 0, prefetched, drawn;
	const prefetchedP = new Promise((r) => { prefetched = r; });
	const drawnP = new Promise((r) => { drawn = r; });
	const said = async () => { while (!document.getElementById("message").textContent.includes("Undid")) await new Promise((r) => setTimeout(r, 10)); };
	window.fetch = async (path, opt) => {
		path = String(path);
		if (path.startsWith("/api/item")) { const res = await real(path, opt); await prefetchedP; return res; }
		if (path.startsWith("/api/undo")) { await drawnP; return real(path, opt); }
		if (path.startsWith("/api/view") && rec.test(path)) {
			views++;
			if (views === 1) prefetched();
			if (views === 2) { const res = await real(path, opt); drawn(); await said(); return res; }
		}
		return real(path, opt);
	};
	return true;
})()`

// viewBeforeUndo: a record's view drawn before an undo on it, reaching the
// page after the undo was answered, does not bring the undone decision
// back: the page shows the record as the log holds it. The page keeps its
// own copy of the records it showed and brings it up to date with each
// answer, so the race needs a record it fetches again: under the filter
// of items not yet reviewed, whose queue changes with every decision.
func viewBeforeUndo(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run, srv := demo(t, 3)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"&ur=1"), settled(), focused(`#item-1`)); err != nil {
		t.Fatal(err)
	}
	first := shownRecord(t, ctx)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(slowNetwork, first))); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx, press("j"), press("j"), press("j"), press("j"), focused(`#item-5`), press("a"),
		until(fmt.Sprintf(`document.body.dataset.record !== %q`, first)), settled(), press("u"), showing(first), settled())
	if err != nil {
		t.Fatal(err)
	}
	if es := readLog(t, run); len(es) != 2 || es[1].Action != review.ActionUndo {
		t.Fatalf("the log: %+v", es)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a guard against a hang: until returns once the badge shows
	defer cancel()
	if err := chromedp.Do(wctx, until(`document.querySelector("#item-5 .badge.open")`)); err != nil {
		t.Fatalf("item #5 of %s is not shown open after its accept was undone (%s): %v", first, text(t, ctx, `#item-5 .badge`), err)
	}
}

// countViews replaces the page's fetch to count the views it asks for,
// by record (window.viewsAsked).
const countViews = `(() => {
	const real = window.fetch;
	window.viewsAsked = {};
	window.fetch = (path, opt) => {
		const m = /[?&]rec=([^&]*)/.exec(String(path));
		if (String(path).startsWith("/api/view") && m) { const id = decodeURIComponent(m[1]); window.viewsAsked[id] = (window.viewsAsked[id] || 0) + 1; }
		return real(path, opt);
	};
	return true;
})()`

// backWithoutFetch: a record decided and left is shown again at once when
// the reviewer goes back to it (p), with its decisions, without asking the
// server for it again: the answers to its decisions brought the page's
// copy up to date, and the key's time to the screen is the page's own.
func backWithoutFetch(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	_, srv := demo(t, 3)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), settled(), focused(`#item-1`)); err != nil {
		t.Fatal(err)
	}
	first := shownRecord(t, ctx)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](countViews)); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx, press("a"), press("a"), press("a"), press("a"), press("a"),
		until(fmt.Sprintf(`document.body.dataset.record !== %q`, first)), settled(), until(`document.body.dataset.nextReady === "1"`),
		press("p"), showing(first), settled(), until(`document.querySelectorAll("#items .item.decided.accept:not(.pending)").length === 5`))
	if err != nil {
		t.Fatal(err)
	}
	asked, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int]("window.viewsAsked"))
	if err != nil {
		t.Fatal(err)
	}
	if asked[first] != 0 {
		t.Fatalf("going back to %s asked the server for its view %d times (views asked: %v); want it shown from the page's copy", first, asked[first], asked)
	}
}

// focusClearOfHeader: in a short window, j moves the focus down a long
// rubric and the focused item is never under the sticky header, while
// the problem stays on the screen.
func focusClearOfHeader(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	_, srv := demo(t, 2)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 480), chromedp.Navigate(srv.URL), settled(), focused(`#item-1`)); err != nil {
		t.Fatal(err)
	}
	const clear = `(() => {
		const h = document.querySelector("header").getBoundingClientRect();
		const it = document.activeElement.getBoundingClientRect();
		const p = document.querySelector(".problem").getBoundingClientRect();
		return it.top >= h.bottom - 1 && it.top < innerHeight && p.bottom > h.bottom && p.top < innerHeight;
	})()`
	for i := 2; i <= 5; i++ {
		if err := chromedp.Do(ctx, press("j"), focused(fmt.Sprintf("#item-%d", i)), until(clear)); err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
	}
	for i := 4; i >= 1; i-- {
		if err := chromedp.Do(ctx, press("k"), focused(fmt.Sprintf("#item-%d", i)), until(clear)); err != nil {
			t.Fatalf("back to item %d: %v", i, err)
		}
	}
}

// reEdit: e on an edited item starts from the edit; Enter with nothing
// changed logs nothing and says so; the item's header shows its new weight
// and its figures are marked as measured on the old text.
func reEdit(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run, srv := demo(t, 2)
	const edited = "Checks the count against a case of three items worked by hand."
	err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), settled(), focused(`#item-1`), press("j"), focused(`#item-2`),
		press("e"), focused(`#item-2 .text-input`), chromedp.SetValue(chromedp.CSS(`#item-2 .text-input`), edited),
		chromedp.SetValue(chromedp.CSS(`#item-2 .weight-input`), "2"), press(kb.Enter), decided("2", "edit"), settled(),
		press("k"), focused(`#item-2`), press("e"), focused(`#item-2 .text-input`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#item-2 .text-input`)))
	w, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#item-2 .weight-input`)))
	if v != edited || w != "2" {
		t.Fatalf("e on the edited item starts from %q, weight %q", v, w)
	}
	if err := chromedp.Do(ctx, press(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`#item-2 .form .error`))); err != nil {
		t.Fatal(err)
	}
	if msg := text(t, ctx, `#item-2 .form .error`); !strings.Contains(msg, "Nothing changed") {
		t.Fatalf("Enter with nothing changed says %q", msg)
	}
	if err := chromedp.Do(ctx, press(kb.Escape), focused(`#item-2`), settled()); err != nil {
		t.Fatal(err)
	}
	if n := len(readLog(t, run)); n != 1 {
		t.Fatalf("the log holds %d entries; want the one edit", n)
	}
	if head := text(t, ctx, `#item-2 .head .w`); head != "weight 2" {
		t.Fatalf("the edited item's header says %q", head)
	}
	if f := text(t, ctx, `#item-2 .figures`); !strings.Contains(f, "measured on the old text") {
		t.Fatalf("the edited item's figures are not marked: %q", f)
	}
}

// flags: f flags, f again changes nothing (one flag in the log), F takes
// the flag away, and the flagged filter shows the flagged records.
func flags(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run, srv := demo(t, 3)
	err := chromedp.Do(ctx, chromedp.Navigate(srv.at("rec=r02")), showing("r02"), focused(`#item-1`),
		press("f"), chromedp.WaitVisible(chromedp.CSS(`.badge.flag:not(.pending)`)), settled(),
		press("f"), until(`document.getElementById("message").textContent.includes("already flagged")`), settled())
	if err != nil {
		t.Fatal(err)
	}
	if es := readLog(t, run); len(es) != 1 || es[0].Action != review.ActionFlag {
		t.Fatalf("f twice logged %+v", es)
	}
	err = chromedp.Do(ctx, chromedp.Navigate(srv.at("fl=1")), showing("r02"),
		until(`document.querySelector("#position").textContent.includes("1 of 1")`),
		focused(`#item-1`), press("F"), chromedp.WaitNotPresent(chromedp.CSS(`.badge.flag`)), settled())
	if err != nil {
		t.Fatal(err)
	}
	if es := readLog(t, run); len(es) != 2 || es[1].Action != review.ActionUnflag {
		t.Fatalf("the log after F: %+v", es)
	}
}

// helpButtonsHints: the help blocks the keys behind it; the buttons do
// what the keys do; the Shift+Enter hint shows only where an item may
// hold a line break (not in SRaR).
func helpButtonsHints(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run, srv := demo(t, 2)
	err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), settled(), focused(`#item-1`),
		press("?"), chromedp.WaitVisible(chromedp.CSS(`#help`)), press("a"), press("j"),
		press(kb.Escape), chromedp.WaitNotVisible(chromedp.CSS(`#help`)), settled(), focused(`#item-1`))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readLog(t, run)); n != 0 {
		t.Fatalf("a key pressed under the help logged %d decisions", n)
	}
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#item-2 button.accept`)), decided("2", "accept"), settled(),
		press("e"), chromedp.WaitVisible(chromedp.CSS(`.form .hint`)))
	if err != nil {
		t.Fatal(err)
	}
	if hint := text(t, ctx, `.form .hint`); strings.Contains(hint, "Shift+Enter") {
		t.Fatalf("an SRaR item's edit hint offers a new line: %q", hint)
	}
	if es := readLog(t, run); len(es) != 1 || es[0].Item != 2 {
		t.Fatalf("the accept button logged %+v", es)
	}
}

// groundedReview reviews criteria of a grounded corpus against their
// passage (accept, reject, edit text and weight) and exports it with the
// log: the export holds the edit and not the rejected criterion.
func groundedReview(t *testing.T, browser context.Context) {
	ctx := newTab(t, browser)
	run := filepath.Join(t.TempDir(), "grounded")
	if err := reviewtest.GroundedRun(run, 2); err != nil {
		t.Fatal(err)
	}
	srv := startReview(t, run, "--reviewer", "alice", "--addr", "127.0.0.1:0")
	const edited = "The answer says the log reaches stable storage before any data page."
	err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), settled(), chromedp.WaitVisible(chromedp.CSS(`.passage`)),
		focused(`#item-q0-1`), press("a"), decided("q0-1", "accept"),
		focused(`#item-q0-2`), press("r"), focused(`#item-q0-2 .reason-input`), press("not in the passage"+kb.Enter), decided("q0-2", "reject"),
		focused(`#item-q0-3`), press("e"), focused(`#item-q0-3 .text-input`),
		chromedp.SetValue(chromedp.CSS(`#item-q0-3 .text-input`), edited), chromedp.SetValue(chromedp.CSS(`#item-q0-3 .weight-input`), "2"),
		press(kb.Enter), decided("q0-3", "edit"), settled())
	if err != nil {
		t.Fatalf("reviewing criteria: %v", err)
	}
	id := shownRecord(t, ctx)
	srv.kill()
	exportGrounded(t, run, id, edited)
}

// screenshot checks the page's picture and, with -update, writes it to
// docs/review.png.
func screenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("(window.scrollTo(0, 0), true)")); err != nil {
		t.Fatal(err)
	}
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

// at is the server's URL (with its token) with the query q added.
func (s *reviewServer) at(q string) string {
	if q == "" {
		return s.URL
	}
	return s.URL + "&" + q
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
