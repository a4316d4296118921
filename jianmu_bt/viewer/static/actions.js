// The jianmu viewer's actions: the held calls a live run waits on (Approve, Deny) and "fork from
// here" for a durable run's history. `window.JianmuActions(view, helpers)` returns the functions
// bound to the page's `view` (viewer.js), which supplies `helpers`: `withToken(headers)` (the
// token header added), `short(value, limit)` and `showProblems(list)`.
"use strict";

window.JianmuActions = function (view, { withToken, short, showProblems }) {
  const $ = (id) => document.getElementById(id);

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
      const what = document.createElement("div");
      what.textContent = `${call.node || ""}: ${call.tool} ${short(call.arguments, 300)} [${call.call_id}]`;
      const reason = document.createElement("input");
      reason.placeholder = "reason (for a denial)";
      reason.className = "reason";
      const approve = document.createElement("button");
      approve.textContent = "Approve"; approve.className = "approve";
      const deny = document.createElement("button");
      deny.textContent = "Deny"; deny.className = "deny";
      approve.addEventListener("click", () => decide(call.call_id, "approve", ""));
      deny.addEventListener("click", () => decide(call.call_id, "deny", reason.value));
      item.append(what, approve, deny, reason);
      list.appendChild(item);
    }
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

  return { renderHeld, renderFork, fork, refreshPending };
};
