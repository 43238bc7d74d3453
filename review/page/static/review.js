// The review page's script. It draws a record from /api/view and redraws
// it in place; it never reloads the page. A key acts on the item the
// reviewer sees when they press it: the decision is queued at once (the
// item shows "saving…") and sent, one after another in the order pressed,
// with the decision the page showed standing on the item; the server
// refuses one made on a stale view, and the page then says so on the item
// and shows what the log holds. Neighbouring records are fetched before
// they are asked for, so that moving on is immediate.
"use strict";
(function () {
  const body = document.body;
  const key = document.querySelector('meta[name="review-key"]').content;
  const filter = body.dataset.filter || "";
  const recordEl = document.getElementById("record");
  const itemsEl = document.getElementById("items");
  const header = document.getElementById("header");
  const help = document.getElementById("help");
  const messageEl = document.getElementById("message");
  const timings = [];
  window.reviewTimings = timings; // for the browser test and the benchmark

  let view = null; // the view shown
  let cards = []; // the item cards of the view, in order
  let loading = ""; // a record on its way to the screen
  const cache = new Map(); // record id -> {promise, view}: prefetched views, the least recently used first
  const cacheMax = 32; // views kept
  // A filter on the reviewer's own decisions (unreviewed, flagged) or a
  // skip changes the queue itself: a view is then fetched again after a
  // decision rather than brought up to date in place.
  const queueFollowsDecisions = /(^|&)(ur|fl)=1(&|$)/.test(filter);
  const known = new Map(); // "record/key" -> the item as the log last said
  const pending = new Map(); // "record/key" -> the op on its way
  const failed = new Map(); // "record/key" -> why the last decision was refused
  let answers = 0; // decisions and undos the server has answered, counted
  let progressAt = -1; // the count of answers the progress shown was drawn after
  const answeredAt = new Map(); // record id -> the count when one on it was last answered
  const outbox = []; // ops not yet answered, in order
  let sending = false;
  let form = null; // the open form
  let pendingForm = null; // a form to open when its key comes up
  const undoName = "review-undo:" + location.pathname;
  const undoStack = loadUndo(); // this tab's decisions, last on top

  // ---- small helpers
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function say(text) {
    messageEl.textContent = text;
    messageEl.hidden = false;
    clearTimeout(say.timer);
    say.timer = setTimeout(() => { messageEl.hidden = true; }, 6000);
  }
  function fmtWeight(w) { return String(Number(w)); }
  function pct(x) { return x === null || x === undefined ? "-" : Math.round(100 * x) + "%"; }
  function signed(x) { return x === null || x === undefined ? "-" : (x >= 0 ? "+" : "") + x.toFixed(2); }
  function itemKey(recordID, it) { return recordID + "/" + it.key; }
  function loadUndo() {
    try { return JSON.parse(sessionStorage.getItem(undoName) || "[]"); } catch (e) { return []; }
  }
  function saveUndo() {
    const done = undoStack.filter((u) => u.seq).map((u) => ({ record: u.record, key: u.key, seq: u.seq }));
    try { sessionStorage.setItem(undoName, JSON.stringify(done)); } catch (e) { /* private mode: this tab forgets on reload */ }
  }
  function setOutbox() { body.dataset.outbox = String(outbox.length); }
  function shown(keyName, t0) {
    requestAnimationFrame(() => timings.push({ key: keyName, shown: performance.now() - t0, saved: null }));
  }

  async function call(method, path, payload) {
    try {
      const res = await fetch(path, {
        method: method,
        headers: method === "POST" ? { "Content-Type": "application/json", "X-Review-Key": key } : {},
        body: payload ? JSON.stringify(payload) : undefined,
        credentials: "same-origin",
      });
      const out = await res.json().catch(() => ({ ok: false, error: "the server's answer did not read (" + res.status + ")" }));
      if (res.ok && out.ok === undefined) out.ok = true;
      return out;
    } catch (e) {
      return { ok: false, error: "the server did not answer: is validate review still running? (" + e + ")" };
    }
  }
  function viewURL(id) { return "/api/view?" + filter + (filter ? "&" : "") + (id ? "rec=" + encodeURIComponent(id) : ""); }
  function fetchView(id) {
    const c = cache.get(id);
    if (c) {
      remember(id, c);
      return c.promise;
    }
    const entry = { promise: null, view: null };
    entry.promise = getView(id).then((v) => {
      if (v.ok && cache.get(id) === entry) entry.view = v;
      else if (cache.get(id) === entry) cache.delete(id);
      return v;
    });
    remember(id, entry);
    return entry.promise;
  }
  // remember keeps entry as the most recently used view, and forgets the
  // least recently used beyond cacheMax.
  function remember(id, entry) {
    cache.delete(id);
    cache.set(id, entry);
    for (const old of cache.keys()) {
      if (cache.size <= cacheMax) break;
      cache.delete(old);
    }
  }
  // getView gets the view of record id as the log holds it: a view asked
  // for before a decision on the record was answered may have been drawn
  // before the decision was logged (requests need not reach the server in
  // the order sent), so it is asked for again.
  async function getView(id) {
    for (;;) {
      const asked = answers;
      const v = await call("GET", viewURL(id));
      v.asked = asked;
      if (!v.ok || !id || (answeredAt.get(id) || 0) <= asked) return v;
    }
  }
  // changed notes that the server answered a decision or undo on record
  // id, and brings the record's kept view up to date with the answer out
  // (the item, flag and skip it gives), so that going back to the record
  // shows it at once; without a view to bring up to date (the answer
  // failed, or the queue itself changed), the view is fetched again.
  function changed(id, out, inPlace) {
    answeredAt.set(id, ++answers);
    const c = cache.get(id);
    if (!inPlace || queueFollowsDecisions || !out || !out.ok) {
      cache.delete(id);
      return;
    }
    if (!c || !c.view || !c.view.record) return; // on its way: getView asks again
    const r = c.view.record;
    if (out.item) {
      const i = r.items.findIndex((x) => x.key === out.item.key);
      if (i >= 0) r.items[i] = out.item;
    }
    if ("flag" in out) r.flag = out.flag;
    if ("skipped" in out) r.skipped = out.skipped;
  }

  // ---- drawing
  // setProgress shows progress p, drawn after the count at of answers;
  // progress drawn earlier than the one shown is passed over (a view
  // fetched before the last decisions were answered).
  function setProgress(p, at) {
    if (!p || at < progressAt) return;
    progressAt = at;
    document.getElementById("reviewed").textContent = p.reviewed + " of " + p.total + " items reviewed";
    const bar = document.getElementById("bar");
    bar.max = Math.max(1, p.total);
    bar.value = p.reviewed;
  }
  function setPosition(v) {
    const pos = document.getElementById("position");
    if (!v.record) pos.textContent = "no record in the queue under this filter";
    else if (v.pos >= 0) pos.textContent = "record " + (v.pos + 1) + " of " + v.queue + " in the queue";
    else pos.textContent = "not in the queue under this filter (" + v.queue + " records are)";
  }

  // drawHead draws the record's heading: its id and its flag and skip.
  function drawHead(r) {
    const h1 = el("h1", "record-head");
    h1.append(r.style === "grounded" ? "Passage " : "Record ", el("code", null, r.id), " ", el("span", "dim", [r.style, r.split, r.source].filter(Boolean).join(" · ")));
    if (r.flag) {
      const flag = el("span", "badge flag", "⚑ flagged" + (r.flag.reason ? ": " + r.flag.reason : ""));
      if (r.flag.pending) flag.classList.add("pending");
      h1.append(" ", flag);
    }
    if (r.skipped) h1.append(" ", el("span", "badge skip", "↷ skipped"));
    const old = recordEl.querySelector(".record-head");
    if (old) old.replaceWith(h1); else recordEl.prepend(h1);
    const flagButton = document.getElementById("flag-button");
    flagButton.textContent = "";
    if (r.flag) flagButton.append("unflag ", el("kbd", null, "F")); else flagButton.append("flag ", el("kbd", null, "f"));
    flagButton.dataset.key = r.flag ? "F" : "f";
  }

  function drawRecord(r) {
    recordEl.textContent = "";
    drawHead(r);
    if (r.style === "grounded") {
      if (r.title) recordEl.append(el("h2", null, r.title));
      const p = el("div", "problem");
      p.append(el("h2", null, "Passage"), el("pre", "passage", r.passage));
      recordEl.append(p);
      return;
    }
    const p = el("div", "problem");
    p.append(el("h2", null, "Problem"), el("pre", null, r.problem));
    const truth = el("div", "truth");
    truth.append(el("h2", null, "Ground truth"), el("pre", null, r.answer));
    if (r.reference) {
      const d = el("details");
      d.append(el("summary", null, "reference solution"), el("pre", null, r.reference));
      truth.append(d);
    }
    const ro = el("div", "rollouts");
    const h2 = el("h2", null, "Rollouts ");
    h2.append(el("span", "dim", r.n_correct + " of " + r.n_rollouts + " correct; " + r.rollouts.length + " shown"));
    ro.append(h2);
    for (const x of r.rollouts) {
      const d = el("details", "rollout");
      const s = el("summary", null, (x.correct ? "✓ correct" : "✗ flawed") + " rollout " + x.index + " ");
      s.append(el("span", "dim", "answer " + x.answer + " · " + x.finish));
      d.append(s, el("pre", null, x.text));
      ro.append(d);
    }
    recordEl.append(p, truth, ro);
  }

  // standingOf is what the item says now: its edit, or itself.
  function standingOf(it) {
    const d = it.decision;
    if (d && d.action === "edit" && d.after) return { type: d.after.type, text: d.after.text, weight: d.after.weight };
    return { type: it.type, text: it.text, weight: it.weight };
  }

  function drawCard(card) {
    const it = card.item;
    const k = itemKey(view.record.id, it);
    const op = pending.get(k);
    const d = it.decision;
    const why = failed.get(k);
    card.className = "item";
    if (d) card.classList.add("decided", d.action);
    if (op) card.classList.add("pending");
    if (why) card.classList.add("refused");
    const slot = card.querySelector(".form-slot");
    for (const c of Array.from(card.childNodes)) if (c !== slot) c.remove();
    const now = standingOf(it);
    const head = el("div", "head");
    const label = it.question !== null ? "criterion " + it.id + (it.name ? ": " + it.name : "") : "#" + it.id;
    head.append(el("span", "num", label), " ");
    if (it.question === null) head.append(el("span", "type t-" + now.type, now.type), " ");
    head.append(el("span", "w", "weight " + fmtWeight(now.weight)));
    const status = el("span", "status");
    if (op) status.append(el("span", "badge pending-badge", "… saving " + op.action));
    else if (!d) status.append(el("span", "badge open", "○ not reviewed"));
    else if (d.action === "accept") status.append(el("span", "badge accept", "✓ accepted"));
    else if (d.action === "reject") {
      status.append(el("span", "badge reject", "✗ rejected"));
      if (d.reason) status.append(" ", el("span", "dim", "“" + d.reason + "”"));
    } else if (d.action === "edit") status.append(el("span", "badge edit", "✎ edited"));
    head.append(status);
    card.insertBefore(head, slot);
    const changed = d && d.action === "edit" && d.after && (d.after.text !== it.text || d.after.type !== it.type);
    if (d && d.action === "edit" && d.after) {
      card.insertBefore(el("p", "text edited", d.after.text), slot);
      const was = el("p", "text was");
      was.append(el("span", "dim", "was: "), el("del", null, it.text), " ", el("span", "dim", "(" + (it.type ? it.type + ", " : "") + "weight " + fmtWeight(it.weight) + ")"));
      card.insertBefore(was, slot);
    } else {
      card.insertBefore(el("p", "text", it.text), slot);
    }
    const fig = el("dl", "figures" + (changed ? " stale" : ""));
    const add = (dt, dd, cls) => {
      const div = el("div", cls);
      div.append(el("dt", null, dt), el("dd", null, dd));
      fig.append(div);
    };
    if (changed) add("note", "figures measured on the old text", "stale-note");
    let judge = it.valid === null ? "not judged" : it.valid ? "● valid" : "▲ invalid";
    if (it.valid_reason) judge += " — " + it.valid_reason;
    add("judge", judge);
    if (it.question !== null) {
      add("mean score", pct(it.sat_rate));
      add("varies", it.empirical_valid === null ? "-" : it.empirical_valid ? "● yes" : "▲ no: no training signal");
    } else {
      add("satisfied", pct(it.sat_rate));
      add("corr", signed(it.corr));
      add("empirical", it.empirical_valid === null ? "-" : it.empirical_valid ? "● valid" : "▲ invalid");
      add("edge", signed(it.edge));
    }
    if (it.why && it.why.length) add("look at", it.why.join("; "), "why");
    card.insertBefore(fig, slot);
    const actions = el("div", "actions");
    for (const [cls, name, k2] of [["accept", "accept", "a"], ["reject", "reject", "r"], ["edit", "edit", "e"]]) {
      const b = el("button", cls, name + " ");
      b.type = "button";
      b.tabIndex = -1;
      b.append(el("kbd", null, k2));
      b.addEventListener("click", (ev) => { ev.stopPropagation(); card.focus({ preventScroll: true }); act(k2, ev.timeStamp, card); });
      actions.append(b);
    }
    card.insertBefore(actions, slot);
    const err = el("div", "error card-error");
    err.setAttribute("role", "alert");
    err.hidden = !why;
    if (why) err.textContent = "Not saved: " + why;
    card.append(err);
  }

  function drawItems(r) {
    itemsEl.textContent = "";
    const h2 = el("h2", null, r.style === "grounded" ? "Criteria " : "Rubric items ");
    if (r.hidden) h2.append(el("span", "dim", "(" + r.hidden + " hidden by the filter)"));
    itemsEl.append(h2);
    cards = [];
    let question = null;
    for (const raw of r.items) {
      const k = itemKey(r.id, raw);
      const it = pending.has(k) && known.has(k) ? known.get(k) : raw;
      known.set(k, it);
      if (it.question !== null && it.question !== question) {
        question = it.question;
        const q = r.questions.find((x) => x.index === question);
        const h3 = el("h3", "question", "Question " + (question + 1) + ": ");
        h3.append(el("span", "qtext", q ? q.text : ""));
        itemsEl.append(h3);
      }
      const card = el("article", "item");
      card.tabIndex = 0;
      card.id = "item-" + it.key;
      card.dataset.key = it.key;
      card.item = it;
      card.append(el("div", "form-slot"));
      itemsEl.append(card);
      cards.push(card);
      drawCard(card);
    }
    if (r.items.length === 0) itemsEl.append(el("p", "empty", "No item of this record passes the filter."));
  }

  // render shows view v; focus is "first" (the first item not yet
  // reviewed), "start", "last" or an item key.
  function render(v, focus) {
    view = v;
    closeForm();
    setProgress(v.progress, v.asked || 0);
    setPosition(v);
    body.dataset.next = v.next || "";
    if (!v.record) {
      body.dataset.record = "";
      recordEl.textContent = "";
      itemsEl.textContent = "";
      itemsEl.append(el("p", "empty", "No record matches the filter."));
      return;
    }
    body.dataset.record = v.record.id;
    document.title = v.record.id + " · rubric review";
    drawRecord(v.record);
    drawItems(v.record);
    const q = new URLSearchParams(filter);
    q.set("rec", v.record.id);
    history.replaceState(null, "", "/?" + q.toString());
    let i = -1;
    if (focus === "last") i = cards.length - 1;
    else if (focus === "start") i = 0;
    else if (focus && focus !== "first") i = cards.findIndex((c) => c.dataset.key === focus);
    if (i < 0) i = cards.findIndex((c) => !c.item.decision);
    focusCard(i < 0 ? 0 : i);
    prefetch(v);
  }

  // prefetch fetches the records around v before they are asked for: the
  // one before, the next and the one after it (a reviewer moving on
  // quickly finds both ready).
  function prefetch(v) {
    body.dataset.nextReady = v.next ? "0" : "1";
    if (v.prev) fetchView(v.prev);
    if (!v.next) return;
    fetchView(v.next).then((nv) => {
      if (view !== v) return;
      body.dataset.nextReady = "1";
      if (nv.ok && nv.next) fetchView(nv.next);
    });
  }

  function focusCard(i) {
    if (cards.length === 0) return;
    i = Math.max(0, Math.min(i, cards.length - 1));
    cards[i].focus({ preventScroll: true });
    cards[i].scrollIntoView({ block: "nearest" });
  }
  function current() {
    const i = cards.indexOf(document.activeElement);
    if (i >= 0) return i;
    return cards.findIndex((c) => c.contains(document.activeElement));
  }

  // go shows record id; keys acting on items are refused until it is shown.
  async function go(id, focus, t0, keyName) {
    if (!id) {
      say(focus === "last" ? "This is the first record in the queue" : "That was the last record in the queue");
      return false;
    }
    const c = cache.get(id);
    if (c && c.view) {
      remember(id, c);
      render(c.view, focus);
      if (t0 !== undefined) shown(keyName, t0);
      return true;
    }
    loading = id;
    body.dataset.loading = "1";
    document.getElementById("loading").hidden = false;
    const v = await fetchView(id);
    if (loading !== id) return false; // another move came after
    loading = "";
    body.dataset.loading = "0";
    document.getElementById("loading").hidden = true;
    if (!v.ok) {
      say("Record " + id + " could not be shown: " + v.error);
      return false;
    }
    render(v, focus);
    if (t0 !== undefined) shown(keyName, t0);
    return true;
  }

  // ---- decisions
  function enqueue(op) {
    outbox.push(op);
    setOutbox();
    if (!sending) pump();
  }
  async function pump() {
    sending = true;
    while (outbox.length > 0) {
      const op = outbox[0];
      await send(op);
      outbox.shift();
      setOutbox();
    }
    sending = false;
  }

  async function send(op) {
    if (op.kind === "undo") return sendUndo(op);
    if (op.kind === "record") {
      const out = await call("POST", "/api/record", { record: op.record, action: op.action });
      answered(op, out);
      changed(op.record, out, op.action !== "skip");
      if (out.ok) {
        op.undo.seq = out.entry.seq;
        saveUndo();
        setProgress(out.progress, answers);
      } else {
        removeUndo(op.undo);
        say("Not saved: " + out.error);
      }
      if (view && view.record && view.record.id === op.record) {
        view.record.flag = out.ok ? out.flag : op.flagBefore;
        if (out.ok) view.record.skipped = out.skipped;
        drawHead(view.record);
        if (!out.ok) await refresh(op.record); // show what the log holds (another tab may have flagged it)
      }
      return;
    }
    const k = itemKey(op.record, op.item);
    const seenItem = known.get(k) || op.item;
    const payload = Object.assign({ record: op.record, question: op.item.question, item: op.item.id, action: op.action,
      seen: seenItem.decision ? seenItem.decision.seq : 0 }, op.extra);
    const out = await call("POST", "/api/item", payload);
    answered(op, out);
    pending.delete(k);
    if (out.ok) {
      failed.delete(k);
      known.set(k, out.item);
      changed(op.record, out, true);
      op.undo.seq = out.entry.seq;
      saveUndo();
      setProgress(out.progress, answers);
      redrawItem(op.record, out.item);
      return;
    }
    removeUndo(op.undo);
    if (/^nothing changed/.test(out.error || "")) { // a no-op: said, not an error on the item
      say("Not saved: " + out.error);
      redrawItem(op.record, known.get(k) || op.item);
      return;
    }
    failed.set(k, out.error);
    say("Not saved: " + out.error);
    cache.delete(op.record);
    if (op.form && /would make the item invalid|reason is/.test(out.error) && view && view.record.id === op.record) {
      const card = cards.find((c) => c.dataset.key === op.item.key);
      if (card) {
        failed.delete(k);
        drawCard(card);
        openForm(card, op.form.kind, op.form.values, "Not saved: " + out.error);
        return;
      }
    }
    await refresh(op.record);
  }

  function answered(op, out) {
    if (op.timing) op.timing.saved = performance.now() - op.t0;
    else timings.push({ key: op.action, shown: null, saved: performance.now() - op.t0 });
    op.result = out;
  }

  // refresh fetches record id again when it is shown and redraws its items
  // as the log has them, keeping the focus.
  async function refresh(id) {
    if (!view || !view.record || view.record.id !== id) return;
    const v = await getView(id);
    if (!v.ok || !view || !view.record || view.record.id !== id) return;
    const focusKey = current() >= 0 ? cards[current()].dataset.key : null;
    for (const it of v.record.items) {
      const k = itemKey(id, it);
      if (!pending.has(k)) known.set(k, it);
    }
    view.record.flag = v.record.flag;
    view.record.skipped = v.record.skipped;
    for (const card of cards) {
      const it = known.get(itemKey(id, card.item));
      if (it) { card.item = it; drawCard(card); }
    }
    drawHead(view.record);
    setProgress(v.progress, v.asked);
    if (focusKey && document.activeElement === document.body) {
      const i = cards.findIndex((c) => c.dataset.key === focusKey);
      if (i >= 0) cards[i].focus({ preventScroll: true });
    }
  }

  function redrawItem(id, it) {
    if (!view || !view.record || view.record.id !== id) return;
    const card = cards.find((c) => c.dataset.key === it.key);
    if (!card) return;
    card.item = it;
    drawCard(card);
  }

  // pushUndo notes a decision on its way; it is saved for a reload once
  // answered (saveUndo keeps only decisions the log numbered), so the key
  // itself writes nothing to the tab's storage.
  function pushUndo(u) {
    undoStack.push(u);
  }
  function removeUndo(u) {
    const i = undoStack.indexOf(u);
    if (i >= 0) undoStack.splice(i, 1);
    saveUndo();
  }

  // decide queues decision action on card: the card shows it on its way and
  // the focus moves on (after the last item, to the next record).
  function decide(card, action, extra, t0, formState) {
    const it = card.item;
    const rec = view.record.id;
    const op = { kind: "item", record: rec, item: it, action: action, extra: extra || {}, t0: t0, form: formState };
    op.timing = { key: action, shown: null, saved: null };
    timings.push(op.timing);
    op.undo = { record: rec, key: it.key, seq: 0, op: op };
    pushUndo(op.undo);
    pending.set(itemKey(rec, it), op);
    failed.delete(itemKey(rec, it));
    drawCard(card);
    enqueue(op);
    const i = cards.indexOf(card);
    if (i >= 0 && i < cards.length - 1) focusCard(i + 1);
    else if (view.next) go(view.next, "start");
    else card.focus({ preventScroll: true });
    requestAnimationFrame(() => { op.timing.shown = performance.now() - t0; });
  }

  function decideRecord(action, t0) {
    const rec = view.record.id;
    const op = { kind: "record", record: rec, action: action, t0: t0, flagBefore: view.record.flag };
    op.undo = { record: rec, key: "", seq: 0, op: op };
    pushUndo(op.undo);
    if (action === "flag") view.record.flag = { pending: true, reason: "" };
    if (action === "unflag") view.record.flag = null;
    drawHead(view.record);
    enqueue(op);
    shown(action, t0);
  }

  function undo(t0) {
    const u = undoStack.pop();
    saveUndo();
    if (!u) {
      say("Nothing to undo in this tab (u takes back the decisions made here, last first)");
      return;
    }
    const back = !view || !view.record || view.record.id !== u.record;
    const op = { kind: "undo", record: u.record, u: u, t0: t0, back: back };
    enqueue(op);
    if (back) go(u.record, u.key || "first", t0, "u");
  }

  async function sendUndo(op) {
    const u = op.u;
    if (!u.seq && u.op && !(u.op.result && u.op.result.ok)) {
      say("Nothing undone: that decision was not saved");
      return;
    }
    const out = await call("POST", "/api/undo", { record: u.record, seq: u.seq });
    answered(op, out);
    if (!out.ok) {
      say("Not undone: " + out.error);
      return;
    }
    changed(u.record, out, !(out.undone && out.undone.action === "skip"));
    say(out.message + (op.back ? " (back on record " + u.record + ")" : ""));
    setProgress(out.progress, answers);
    if (out.item) {
      known.set(itemKey(u.record, out.item), out.item);
      redrawItem(u.record, out.item);
    }
    if (view && view.record && view.record.id === u.record) {
      view.record.flag = out.flag;
      view.record.skipped = out.skipped;
      drawHead(view.record);
      if (out.item && !cards.some((c) => c.dataset.key === out.item.key)) await showUndone(u.record, out.item.key);
    }
  }

  // showUndone shows record id again, with the item of key an undo brought
  // back: a filter on the reviewer's decisions (not yet reviewed) had
  // hidden it while its decision stood.
  async function showUndone(id, key) {
    const v = await getView(id);
    if (v.ok && v.record && view && view.record && view.record.id === id && !loading) render(v, key);
  }

  // ---- forms
  function openForm(card, kind, values, error) {
    closeForm();
    const it = card.item;
    const now = standingOf(it);
    const slot = card.querySelector(".form-slot");
    const f = el("div", "form");
    const err = el("div", "error");
    err.setAttribute("role", "alert");
    err.hidden = !error;
    if (error) err.textContent = error;
    let fields;
    const lineBreaks = view.record.line_breaks;
    if (kind === "reject") {
      const reason = el("input", "reason-input");
      reason.type = "text";
      reason.placeholder = "reason (optional)";
      reason.setAttribute("aria-label", "reason for the rejection");
      if (values) reason.value = values.reason;
      f.append(reason);
      fields = { reason: reason };
    } else {
      const text = el("textarea", "text-input");
      text.value = values ? values.text : now.text;
      text.setAttribute("aria-label", it.question !== null ? "criterion description" : "item text");
      const row = el("div", "row");
      let type = null;
      if (view.record.types.length) {
        type = el("select", "type-input");
        type.setAttribute("aria-label", "item type");
        for (const t of view.record.types) {
          const o = el("option", null, t);
          o.value = t;
          if (t === (values ? values.type : now.type)) o.selected = true;
          type.append(o);
        }
        row.append("type ", type, " ");
      }
      const weight = el("input", "weight-input");
      weight.type = "text";
      weight.inputMode = "decimal";
      weight.value = values ? values.weight : fmtWeight(now.weight);
      weight.setAttribute("aria-label", "weight");
      row.append("weight ", weight);
      f.append(text, row);
      fields = { text: text, type: type, weight: weight };
    }
    const hint = el("div", "hint", kind === "reject" ? "reject: Enter saves, Esc cancels"
      : "edit: Enter saves, Esc cancels, Tab moves to the " + (view.record.types.length ? "type and weight" : "weight") +
        (lineBreaks ? ", Shift+Enter starts a new line" : ""));
    f.append(err, hint);
    slot.append(f);
    form = { card: card, kind: kind, fields: fields, el: f };
    const save = (t0) => {
      if (kind === "reject") {
        const values = { reason: fields.reason.value };
        closeForm();
        decide(card, "reject", { reason: values.reason }, t0, { kind: kind, values: values });
        return;
      }
      const values = { text: fields.text.value, type: fields.type ? fields.type.value : now.type, weight: fields.weight.value.trim() };
      const w = values.weight === "" ? NaN : Number(values.weight);
      const after = { text: values.text.trim(), type: values.type, weight: w };
      if (after.text === now.text.trim() && after.type === now.type && w === Number(now.weight)) {
        err.textContent = "Nothing changed: not saved (Esc closes the form)";
        err.hidden = false;
        return;
      }
      closeForm();
      decide(card, "edit", { after: { text: after.text, type: after.type, weight: isNaN(w) ? "NaN" : w } }, t0, { kind: kind, values: values });
    };
    f.addEventListener("keydown", (ev) => {
      ev.stopPropagation();
      if (ev.key === "Escape") {
        ev.preventDefault();
        closeForm();
        card.focus({ preventScroll: true });
      } else if (ev.key === "Enter" && !(ev.shiftKey && lineBreaks && ev.target === fields.text)) {
        ev.preventDefault();
        save(ev.timeStamp);
      }
    });
    const first = kind === "reject" ? fields.reason : fields.text;
    first.focus();
    if (first.select) first.select();
  }
  function closeForm() {
    if (!form) return;
    form.el.remove();
    form = null;
  }

  // ---- keys
  function toggleHelp(show) {
    help.hidden = show === undefined ? !help.hidden : !show;
    if (help.hidden) {
      const i = current();
      if (i < 0) focusCard(0);
    } else {
      document.getElementById("help-close").focus();
    }
  }

  // act does what key k does, for a key press or a button.
  function act(k, t0, card) {
    if (!view || !view.record) {
      if (k === "?") toggleHelp();
      return;
    }
    const itemKeys = "arefFsu";
    if (loading && itemKeys.includes(k)) {
      say("Record " + loading + " is still loading: " + k + " was not applied");
      return;
    }
    let i = card ? cards.indexOf(card) : current();
    switch (k) {
      case "j":
        if (i >= cards.length - 1) go(view.next, "start", t0, k); else { focusCard(i + 1); shown(k, t0); }
        break;
      case "k":
        if (i <= 0) go(view.prev, "last", t0, k); else { focusCard(i - 1); shown(k, t0); }
        break;
      case "n":
        if (!view.next) say("That was the last record in the queue"); else go(view.next, "first", t0, k);
        break;
      case "p":
        if (!view.prev) say("This is the first record in the queue"); else go(view.prev, "first", t0, k);
        break;
      case "a":
      case "r":
      case "e":
        if (cards.length === 0) return;
        if (i < 0) { focusCard(0); i = 0; }
        if (k === "a") decide(cards[i], "accept", {}, t0);
        else if (card) openForm(cards[i], k === "r" ? "reject" : "edit");
        else pendingForm = { card: cards[i], kind: k === "r" ? "reject" : "edit", key: k };
        break;
      case "u":
        undo(t0);
        break;
      case "s": {
        const next = view.next;
        decideRecord("skip", t0);
        if (next) go(next, "first"); else say("Skipped; that was the last record in the queue");
        break;
      }
      case "f":
        if (view.record.flag) say("Record " + view.record.id + " is already flagged (F takes the flag away)");
        else decideRecord("flag", t0);
        break;
      case "F":
        if (!view.record.flag) say("Record " + view.record.id + " is not flagged");
        else decideRecord("unflag", t0);
        break;
      case "o": {
        const ds = Array.from(document.querySelectorAll("details.rollout"));
        const open = !ds.some((d) => d.open);
        ds.forEach((d) => { d.open = open; });
        break;
      }
      case "?":
        toggleHelp();
        break;
    }
  }

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (!help.hidden) { // the help blocks every key but its own
      ev.preventDefault();
      if (ev.key === "Escape" || ev.key === "?") toggleHelp(false);
      return;
    }
    const t = ev.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return;
    if (t instanceof HTMLButtonElement && (ev.key === "Enter" || ev.key === " ")) return;
    if (ev.key === "Escape") { closeForm(); return; }
    if (!"jknpaerufFso?".includes(ev.key) || ev.key.length !== 1) return;
    ev.preventDefault();
    if (ev.repeat && "aerufFs".includes(ev.key)) return; // a key held down is one decision
    act(ev.key, ev.timeStamp);
  });
  // A form opens when its key comes up, so that the key's own character
  // is never typed into it.
  document.addEventListener("keyup", (ev) => {
    if (pendingForm && ev.key === pendingForm.key) {
      const p = pendingForm;
      pendingForm = null;
      if (cards.includes(p.card)) openForm(p.card, p.kind);
    }
  });
  // The toolbar's buttons act as their keys on the item last focused, and
  // give the focus back to it.
  let lastCard = -1;
  itemsEl.addEventListener("focusin", () => { lastCard = current(); });
  for (const b of document.querySelectorAll(".toolbar button")) {
    b.addEventListener("click", (ev) => {
      const k = b.dataset.key;
      const card = lastCard >= 0 && lastCard < cards.length ? cards[lastCard] : undefined;
      if (card && k !== "?" && k !== "n" && k !== "p") card.focus({ preventScroll: true });
      act(k, ev.timeStamp, card);
    });
  }
  document.getElementById("help-close").addEventListener("click", () => toggleHelp(false));
  help.addEventListener("click", (ev) => { if (ev.target === help) toggleHelp(false); });

  // The header is sticky: items scroll into view below it, and the record
  // stays beside them (review.css reads --header-h).
  const setHeader = () => document.documentElement.style.setProperty("--header-h", header.offsetHeight + "px");
  new ResizeObserver(setHeader).observe(header);
  setHeader();

  // Start on the record the URL names, else the queue's first.
  const want = new URLSearchParams(location.search).get("rec") || "";
  if (new URLSearchParams(location.search).has("token")) {
    const q = new URLSearchParams(location.search);
    q.delete("token");
    history.replaceState(null, "", "/?" + q.toString());
  }
  // The first view is kept like a prefetched one (answers bring it up to
  // date), so that coming back to the first record needs no fetch.
  const showFirst = (v) => {
    if (v.record && !queueFollowsDecisions) remember(v.record.id, { promise: Promise.resolve(v), view: v });
    render(v, "first");
  };
  call("GET", viewURL(want)).then((v) => {
    body.dataset.loading = "0";
    v.asked = 0;
    if (!v.ok) {
      say(v.error);
      if (want) call("GET", viewURL("")).then((w) => { if (w.ok) { w.asked = 0; showFirst(w); } });
      return;
    }
    showFirst(v);
  });
  setOutbox();
})();
