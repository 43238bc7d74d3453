// The review page's keys. Every decision is POSTed to the server, which
// writes it to the reviewer's log before answering; the page then reloads
// from the server, so what it shows is what the log holds.
"use strict";
(function () {
  const body = document.body;
  const key = document.querySelector('meta[name="review-key"]').content;
  const record = body.dataset.record;
  const style = body.dataset.style;
  const items = Array.from(document.querySelectorAll(".item"));
  const TYPES = style === "factual_process" ? ["FACTUAL", "PROCESS"] : ["SUGGEST", "PITFALL", "BONUS", "ANSWER"];
  let busy = false;
  let pendingForm = null;

  function current() {
    const i = items.indexOf(document.activeElement);
    if (i >= 0) return i;
    return items.findIndex((el) => el.contains(document.activeElement));
  }
  function focusItem(i) {
    if (items.length === 0) return;
    i = Math.max(0, Math.min(i, items.length - 1));
    items[i].focus();
    items[i].scrollIntoView({ block: "nearest" });
  }
  function go(url, focus) {
    if (!url) return;
    const u = new URL(url, location.href);
    if (focus) u.searchParams.set("focus", focus); else u.searchParams.delete("focus");
    u.searchParams.delete("token");
    if (u.href === location.href) location.reload(); else location.replace(u.href);
  }
  function reloadAt(itemID) {
    const u = new URL(location.href);
    u.searchParams.set("rec", record);
    go(u.href, itemID);
  }
  function say(text) {
    const m = document.getElementById("message");
    m.textContent = text;
    m.hidden = false;
    setTimeout(() => { m.hidden = true; }, 4000);
  }
  async function post(path, payload) {
    busy = true;
    try {
      const res = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Review-Key": key },
        body: JSON.stringify(payload),
      });
      const out = await res.json().catch(() => ({ ok: false, error: "the server's answer did not read (" + res.status + ")" }));
      return out;
    } catch (e) {
      return { ok: false, error: "the server did not answer: is validate review still running? (" + e + ")" };
    } finally {
      busy = false;
    }
  }
  // nextFocus is the item to focus after a decision on item i: the next one.
  function nextFocus(i) {
    const n = items[Math.min(i + 1, items.length - 1)];
    return n ? n.dataset.item : "";
  }
  async function decide(i, action, extra) {
    const el = items[i];
    const out = await post("/api/item", Object.assign({ record: record, item: Number(el.dataset.item), action: action }, extra || {}));
    if (!out.ok) return out;
    reloadAt(nextFocus(i));
    return out;
  }

  function openForm(i, kind) {
    const el = items[i];
    const slot = el.querySelector(".form-slot");
    if (slot.firstChild) return;
    const form = document.createElement("div");
    form.className = "form";
    const err = document.createElement("div");
    err.className = "error";
    err.setAttribute("role", "alert");
    err.hidden = true;
    let fields;
    if (kind === "reject") {
      const reason = document.createElement("input");
      reason.type = "text";
      reason.placeholder = "reason (optional)";
      reason.setAttribute("aria-label", "reason for the rejection");
      reason.className = "reason-input";
      form.append(reason);
      fields = [reason];
    } else {
      const text = document.createElement("textarea");
      text.value = el.dataset.text;
      text.setAttribute("aria-label", "item text");
      text.className = "text-input";
      const type = document.createElement("select");
      type.setAttribute("aria-label", "item type");
      for (const t of TYPES) {
        const o = document.createElement("option");
        o.value = o.textContent = t;
        if (t === el.dataset.type) o.selected = true;
        type.append(o);
      }
      const weight = document.createElement("input");
      weight.type = "text";
      weight.inputMode = "decimal";
      weight.value = el.dataset.weight;
      weight.setAttribute("aria-label", "item weight");
      weight.className = "weight-input";
      const row = document.createElement("div");
      row.className = "row";
      row.append("type ", type, " weight ", weight);
      form.append(text, row);
      fields = [text, type, weight];
    }
    const hint = document.createElement("div");
    hint.className = "hint";
    hint.textContent = (kind === "reject" ? "reject" : "edit") + ": Enter to save, Esc to cancel" + (kind === "edit" ? ", Tab to the type and weight, Shift+Enter for a new line" : "");
    form.append(err, hint);
    slot.append(form);
    const close = () => { slot.textContent = ""; el.focus(); };
    const save = async () => {
      if (busy) return;
      let out;
      if (kind === "reject") {
        out = await decide(i, "reject", { reason: fields[0].value });
      } else {
        const w = Number(fields[2].value.trim());
        out = await decide(i, "edit", { after: { text: fields[0].value, type: fields[1].value, weight: fields[2].value.trim() === "" || isNaN(w) ? NaN : w } });
      }
      if (!out.ok) {
        err.textContent = "Not saved: " + out.error;
        err.hidden = false;
      }
    };
    form.addEventListener("keydown", (ev) => {
      ev.stopPropagation();
      if (ev.key === "Escape") { ev.preventDefault(); close(); }
      else if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); save(); }
    });
    fields[0].focus();
    if (fields[0].select) fields[0].select();
  }

  function toggleHelp(show) {
    const h = document.getElementById("help");
    h.hidden = show === undefined ? !h.hidden : !show;
  }

  document.addEventListener("keydown", async (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || busy) return;
    const t = ev.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return;
    let i = current();
    const need = () => { if (i < 0) { focusItem(0); i = 0; } return items.length > 0; };
    let out = null;
    switch (ev.key) {
      case "j":
        if (i >= items.length - 1) go(body.dataset.next, ""); else focusItem(i + 1);
        break;
      case "k":
        if (i <= 0 && current() >= 0) go(body.dataset.prev, ""); else focusItem(i - 1);
        break;
      case "n": go(body.dataset.next, ""); break;
      case "p": go(body.dataset.prev, ""); break;
      case "a": if (need()) out = await decide(i, "accept"); break;
      // The form opens when the key comes up, so that the key's own
      // character is never typed into it.
      case "r": if (need()) { ev.preventDefault(); pendingForm = { i: i, kind: "reject", key: ev.key }; } break;
      case "e": if (need()) { ev.preventDefault(); pendingForm = { i: i, kind: "edit", key: ev.key }; } break;
      case "u":
        out = await post("/api/undo", {});
        if (out.ok) reloadAt(i >= 0 ? items[i].dataset.item : "");
        break;
      case "s":
        // The skipped record goes to the end of the queue: the one after
        // it takes its place.
        out = await post("/api/record", { record: record, action: "skip" });
        if (out.ok) go(body.dataset.here, "");
        break;
      case "f":
        out = await post("/api/record", { record: record, action: "flag" });
        if (out.ok) reloadAt(i >= 0 ? items[i].dataset.item : "");
        break;
      case "o": {
        const ds = Array.from(document.querySelectorAll("details.rollout"));
        const open = !ds.some((d) => d.open);
        ds.forEach((d) => { d.open = open; });
        break;
      }
      case "?": toggleHelp(); break;
      case "Escape": toggleHelp(false); break;
      default: return;
    }
    if (out && !out.ok) say(out.error);
  });

  document.addEventListener("keyup", (ev) => {
    if (pendingForm && ev.key === pendingForm.key) {
      const p = pendingForm;
      pendingForm = null;
      openForm(p.i, p.kind);
    }
  });

  // Focus the item the URL names, else the first one not yet reviewed.
  const want = body.dataset.focus;
  let start = items.findIndex((el) => el.dataset.item === want);
  if (start < 0) start = items.findIndex((el) => !el.classList.contains("decided"));
  focusItem(start < 0 ? 0 : start);
})();
