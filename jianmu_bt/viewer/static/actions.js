// The jianmu viewer's actions: the held calls a live run waits on (Approve, Deny) and "fork from
// here" for a durable run's history. `window.JianmuActions(view, helpers)` returns the functions
// bound to the page's `view` (viewer.js), which supplies `helpers`: `withToken(headers)` (the
// token header added) and `showProblems(list)`.
//
// A held call is shown whole: its arguments as JSON with every control and invisible formatting
// character (bidi overrides, zero-width marks) written as an escape, so nothing can hide or
// reorder text; long arguments start folded, with "show all" saying how much is hidden, and
// Approve waits until they were shown. Why the call is held (the guard's reason and policy) is
// shown too. All of it as text (textContent), never as HTML.
//
// "Edit" opens an editor with the call's arguments as pretty JSON (hidden characters written as
// JSON's own \uXXXX escapes, so they show and the text still parses); "Approve edited" sends the
// text, and the call runs with those arguments. An edit the run refuses (not JSON, not the
// tool's schema, refused by a guard policy) is said next to the call, which stays held.
//
// "Respond" opens a text box for a reply: "Send reply" answers the call in its place (it does
// not run; the agent reads the reply as the tool's result).
"use strict";

window.JianmuActions = function (view, { withToken, showProblems }) {
  const $ = (id) => document.getElementById(id);
  // Arguments longer than this start folded behind "show all".
  const FOLDED_CHARS = 300;
  const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

  function escapeHidden(text) {
    // Every control, format (bidi, zero-width) and line/paragraph separator as \uXXXX.
    return text.replace(HIDDEN, (ch) => {
      const code = ch.codePointAt(0);
      return code > 0xffff ? "\\U" + code.toString(16).padStart(8, "0") : "\\u" + code.toString(16).padStart(4, "0");
    });
  }

  function argumentsText(value) {
    // The complete arguments as one line of JSON, hidden characters escaped.
    const text = JSON.stringify(value === undefined ? null : value);
    return escapeHidden(text === undefined ? String(value) : text);
  }

  function editableText(value) {
    // Pretty JSON to edit: each hidden character (JSON escapes the controls, so these are
    // inside strings) as \uXXXX per UTF-16 unit, which JSON reads back as the same character.
    const text = JSON.stringify(value === undefined ? {} : value, null, 2) || "{}";
    return text.replace(HIDDEN, (ch) => ch === "\n" ? ch : [...Array(ch.length).keys()]
      .map((i) => "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0")).join(""));
  }

  function whyHeld(call) {
    const reason = (call.reason || "").trim();
    const policy = call.policy ? `policy ${call.policy}` : "";
    const said = reason && policy ? `${reason} (${policy})` : reason || policy;
    return said ? `held: ${escapeHidden(said)}` : "";
  }

  // ----------------------------------------------------------------------------- decisions
  function heldCalls() {
    // Calls held by the guard and not yet decided, at the cursor (live runs at their end only).
    const held = new Map();
    for (let i = 0; i < view.cursor; i++) {
      const event = view.events[i];
      if (event.type === "tree.finished") held.clear();  // the run ended: nothing to decide
      else if (event.type === "guard.decision" && event.decision === "pending") held.set(event.call_id, event);
      else if (event.call_id && held.has(event.call_id) && event.type !== "guard.decision") held.delete(event.call_id);
      else if (event.type === "guard.decision" && held.has(event.call_id)) held.delete(event.call_id);
    }
    return [...held.values()];
  }

  function renderHeld() {
    const box = $("held");
    // Only a live run that goes on can take a decision: none once it has finished.
    const live = view.tree.mode === "live" && view.cursor === view.events.length;
    const calls = live ? heldCalls() : [];
    box.hidden = !calls.length;
    const list = $("held-list");
    const shown = [...list.children].map((child) => child.dataset.callId).join(",");
    if (shown === calls.map((call) => call.call_id).join(",")) return;  // keep typed reasons
    list.textContent = "";
    for (const call of calls) {
      const item = document.createElement("div");
      item.className = "call";
      item.dataset.callId = call.call_id;
      const why = document.createElement("div");
      why.className = "why";
      why.textContent = whyHeld(call);
      const reason = document.createElement("input");
      reason.placeholder = "reason (for a denial)";
      reason.className = "reason";
      const approve = document.createElement("button");
      approve.textContent = "Approve"; approve.className = "approve";
      const deny = document.createElement("button");
      deny.textContent = "Deny"; deny.className = "deny";
      approve.addEventListener("click", () => decide(call.call_id, "approve", ""));
      deny.addEventListener("click", () => decide(call.call_id, "deny", reason.value));
      const [edit, editor] = editorFor(call);
      const [respond, replier] = replierFor(call);
      item.append(describeCall(call, approve), why, approve, deny, edit, respond, reason, editor, replier);
      list.appendChild(item);
    }
  }

  function editorFor(call) {
    // The "Edit" button and the editor it opens and closes: the arguments as pretty JSON in a
    // textarea, "Approve edited", and where a refusal is said.
    const edit = document.createElement("button");
    edit.textContent = "Edit"; edit.className = "edit";
    const editor = document.createElement("div");
    editor.className = "editor"; editor.hidden = true;
    const text = document.createElement("textarea");
    text.className = "edit-arguments"; text.spellcheck = false;
    text.value = editableText(call.arguments);
    text.rows = Math.min(12, text.value.split("\n").length + 1);
    const send = document.createElement("button");
    send.textContent = "Approve edited"; send.className = "approve-edited";
    const error = document.createElement("div");
    error.className = "edit-error error";
    edit.addEventListener("click", () => { editor.hidden = !editor.hidden; });
    send.addEventListener("click", () => approveEdited(call.call_id, text.value, error));
    editor.append(text, send, error);
    return [edit, editor];
  }

  function replierFor(call) {
    // The "Respond" button and the box it opens: the reply, "Send reply", where a refusal goes.
    const respond = document.createElement("button");
    respond.textContent = "Respond"; respond.className = "respond";
    const replier = document.createElement("div");
    replier.className = "replier"; replier.hidden = true;
    const text = document.createElement("textarea");
    text.className = "reply"; text.rows = 3;
    text.placeholder = "the reply the agent reads as the tool's result (the call does not run)";
    const send = document.createElement("button");
    send.textContent = "Send reply"; send.className = "send-reply";
    const error = document.createElement("div");
    error.className = "reply-error error";
    respond.addEventListener("click", () => { replier.hidden = !replier.hidden; });
    send.addEventListener("click", () => post(
      { call_id: call.call_id, decision: "respond", reply: text.value }, error));
    replier.append(text, send, error);
    return [respond, replier];
  }

  function approveEdited(callId, text, error) {
    return post({ call_id: callId, decision: "approve", arguments: text }, error);
  }

  async function post(body, error) {
    // The server checks the decision: its refusal is shown here, the call stays held.
    error.textContent = "";
    try {
      const response = await fetch("/api/decide", {
        method: "POST",
        headers: withToken({ "content-type": "application/json" }),
        body: JSON.stringify(body),
      });
      if (response.ok) return;
      const said = await response.json().catch(() => ({}));
      error.textContent = `${response.status}: ${escapeHidden(String(said.error || response.statusText))}`;
    } catch (exc) {
      error.textContent = `the viewer's server does not answer: ${exc}`;
    }
  }

  function describeCall(call, approve) {
    // `node: tool {arguments} [call id]`; long arguments folded behind a "show all" toggle,
    // and `approve` enabled only once they were shown whole.
    const what = document.createElement("div");
    what.className = "what";
    const who = `${escapeHidden(String(call.node || ""))}: ${escapeHidden(String(call.tool))} `;
    const tail = ` [${escapeHidden(String(call.call_id))}]`;
    const full = argumentsText(call.arguments);
    const text = document.createElement("span");
    text.className = "arguments";
    text.textContent = full;
    what.append(who, text, tail);
    if (full.length <= FOLDED_CHARS) return what;
    const hidden = full.length - FOLDED_CHARS;
    const toggle = document.createElement("button");
    toggle.className = "show-all";
    approve.disabled = true;
    approve.title = "show all the arguments first";
    let open = false;
    const show = () => {
      text.textContent = open ? full : `${full.slice(0, FOLDED_CHARS)}\u2026`;
      toggle.textContent = open ? "show less" : `show all (${hidden} more characters)`;
      if (open) { approve.disabled = false; approve.title = ""; }
    };
    toggle.addEventListener("click", () => { open = !open; show(); });
    show();
    what.append(" ", toggle);
    return what;
  }

  async function decide(callId, decision, reason) {
    const error = $("decision-error");
    error.textContent = "";
    const response = await fetch("/api/decide", {
      method: "POST",
      headers: withToken({ "content-type": "application/json" }),
      body: JSON.stringify({ call_id: callId, decision, reason }),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      error.textContent = `${response.status}: ${body.error || response.statusText}`;
    }
  }

  async function refreshPending() {
    // Calls held before this page connected are in the event stream too; nothing more to do
    // here but check the server answers (and show an error if it does not).
    try { await fetch("/api/pending", { headers: withToken() }); } catch (exc) { showProblems([`the viewer's server does not answer: ${exc}`]); }
  }

  // ------------------------------------------------------------------- fork from a checkpoint
  function checkpointAtCursor() {
    for (let i = view.cursor - 1; i >= 0; i--) {
      if (view.events[i].type === "checkpoint") return view.events[i].seq;
    }
    return null;
  }

  function renderFork() {
    const button = $("fork");
    const seq = view.tree.can_fork ? checkpointAtCursor() : null;
    button.hidden = seq === null;
    button.textContent = `fork from checkpoint ${seq}`;
    button.dataset.seq = seq === null ? "" : seq;
  }

  async function fork() {
    const result = $("fork-result");
    result.className = "";
    const response = await fetch("/api/fork", {
      method: "POST",
      headers: withToken({ "content-type": "application/json" }),
      body: JSON.stringify({ seq: Number($("fork").dataset.seq) }),
    });
    const body = await response.json().catch(() => ({}));
    if (response.ok) {
      result.textContent = `forked as ${body.run_id}: continue it with \`${body.resume}\``;
    } else {
      result.className = "error";
      result.textContent = `${response.status}: ${body.error || response.statusText}`;
    }
  }

  return { renderHeld, renderFork, fork, refreshPending, escapeHidden };
};
