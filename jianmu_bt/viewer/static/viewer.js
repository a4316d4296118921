// The jianmu viewer's page: draws the tree, follows the run's events (Server-Sent Events with
// ids, so a reconnect resumes), replays them with a timeline, answers held calls. Every /api/
// request carries the token the viewer printed (read from this page's URL: #token=...).
// Plain JavaScript, no libraries, nothing fetched but this server's own /api routes.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const view = {
    tree: null,        // /api/tree
    events: [],        // every event received, in id order (events[i] has id i + 1)
    cursor: 0,         // how many events are applied (0: none)
    statuses: [],      // per node index, at the cursor
    state: {},         // the run's state at the cursor
    applied: 0,        // events applied to statuses/state
    elements: [],      // per node index: its <g> in the drawing
    edges: [],         // [parent, child, element]
    byAlias: new Map(),// py_trees id / stable key / trace id -> node index
    byName: new Map(), // node name -> first node index with it
    selected: null,
    collapsed: new Set(),
    dirty: new Set(),  // node indices whose colour changed since the last frame
    follow: true,
    ended: false,
    runStatus: "",
    frameScheduled: false,
  };
  window.jianmuViewer = view;
  const drawing = window.JianmuDraw(view);
  view.onSelect = (index) => select(index);
  view.onToggle = (index) => toggleCollapse(index);
  view.onDrawn = () => paint();

  // ---------------------------------------------------------------- the tree and its drawing
  const token = () => $("token").value.trim();
  const withToken = (headers = {}) => ({ ...headers, "x-jianmu-token": token() });
  const actions = window.JianmuActions(view, { withToken, showProblems });  // actions.js
  const desk = window.JianmuDesk(view, { withToken, escapeHidden: actions.escapeHidden });  // desk.js

  async function loadTree() {
    const response = await fetch("/api/tree", { headers: withToken() });
    const tree = await response.json();
    if (response.status === 403) {
      // No (or a wrong) token: say how to get one; a token typed into the box retries.
      showProblems([`${tree.error || "refused"} (type it into the token box)`]);
      throw new Error("no token");
    }
    view.tree = tree;
    $("title").textContent = tree.title || "tree";
    document.title = `${tree.title} - jianmu viewer`;
    $("mode").textContent = tree.mode;
    $("layout-note").textContent = tree.layout_note || "";
    showProblems(tree.problems || []);
    for (const node of tree.nodes) {
      for (const alias of [node.id, node.key, ...(node.aliases || [])]) {
        if (alias) view.byAlias.set(String(alias), node.index);
      }
      if (!view.byName.has(node.name)) view.byName.set(node.name, node.index);
    }
    view.statuses = tree.nodes.map(() => "INVALID");
    drawLegend(tree);
    drawing.draw();
    if (tree.mode === "live") actions.refreshPending();
  }

  function showProblems(problems) {
    const box = $("problems");
    if (!problems.length) { box.hidden = true; return; }
    box.hidden = false;
    box.textContent = problems.join("\n");
  }

  function drawLegend(tree) {
    const legend = $("legend");
    legend.textContent = "";
    for (const [status, colour] of Object.entries(tree.colours)) {
      const key = document.createElement("span");
      key.textContent = status.toLowerCase();
      key.style.background = colour;
      legend.appendChild(key);
    }
  }

  function toggleCollapse(index) {
    if (view.collapsed.has(index)) view.collapsed.delete(index); else view.collapsed.add(index);
    if (view.tree.svg) drawing.applyCollapse(); else drawing.draw();
    if (view.selected !== null) renderPanel();
  }

  // ------------------------------------------------------------------ events, statuses, state
  function nodeOf(event) {
    for (const alias of [event.id, event.node]) {
      if (alias !== undefined && alias !== null && view.byAlias.has(String(alias))) {
        return view.byAlias.get(String(alias));
      }
    }
    if (event.node !== undefined && view.byName.has(event.node)) return view.byName.get(event.node);
    return null;
  }

  function setStatus(index, status) {
    if (index === null || index === undefined || view.statuses[index] === status) return;
    view.statuses[index] = status;
    view.dirty.add(index);
  }

  function apply(event) {
    switch (event.type) {
      case "node.status":
        setStatus(nodeOf(event), event.new);
        break;
      case "checkpoint": {
        // A checkpoint holds the whole tree's progress: a node it does not list has not run.
        const statuses = event.statuses || {};
        for (const node of view.tree.nodes) {
          if (node.key) setStatus(node.index, statuses[node.key] || "INVALID");
        }
        if (event.state) view.state = Object.assign({}, event.state);
        break;
      }
      case "state.write":
        if (event.initial) view.state = {};
        Object.assign(view.state, event.values || {});
        break;
      case "tree.finished":
        view.runStatus = `${event.status}${event.reason ? " (" + event.reason + ")" : ""}`;
        break;
      case "run.record":
        view.runStatus = event.status;
        break;
    }
  }

  function moveTo(cursor) {
    cursor = Math.max(0, Math.min(cursor, view.events.length));
    if (cursor < view.applied) {  // back in time: start over from the first event
      view.statuses = view.tree.nodes.map(() => "INVALID");
      view.tree.nodes.forEach((node) => view.dirty.add(node.index));
      view.state = {};
      view.runStatus = "";
      view.applied = 0;
    }
    while (view.applied < cursor) apply(view.events[view.applied++]);
    view.cursor = cursor;
    schedule();
  }

  function schedule() {
    if (view.frameScheduled) return;
    view.frameScheduled = true;
    requestAnimationFrame(() => { view.frameScheduled = false; paint(); });
  }

  function paint() {
    const colours = view.tree.colours;
    for (const index of view.dirty) {
      const g = view.elements[index];
      if (!g) continue;
      const status = view.statuses[index] || "INVALID";
      g.dataset.status = status;
      for (const shape of drawing.shapesOf(g)) shape.setAttribute("fill", colours[status] || view.tree.plain);
    }
    view.dirty.clear();
    renderTimeline();
    renderState();
    actions.renderHeld();
    desk.render();
    actions.renderFork();
    if (view.selected !== null) renderPanel();
    $("run-status").textContent = view.runStatus;
  }

  // ---------------------------------------------------------------------------- the panels
  function describe(event) {
    const who = event.node ? `${event.node}: ` : "";
    switch (event.type) {
      case "node.status": return `${who}${event.old} -> ${event.new}`;
      case "tool.call.started": return `${who}${event.tool}(${short(event.arguments)})`;
      case "tool.call.completed": return `${who}${event.tool} -> ${short(event.output)}`;
      case "tool.call.failed": return `${who}${event.tool} failed: ${short(event.error)}`;
      case "guard.decision": return `${who}guard ${event.decision} ${event.tool}: ${event.reason || ""}`;
      case "approval.decided": return `${event.call_id} ${event.decision} by the ${event.by}`;
      case "llm.response": return `${who}LLM ${event.tool_calls && event.tool_calls.length ? "asks for " + event.tool_calls.map((c) => c.name).join(", ") : "answers: " + short(event.text)}`;
      case "llm.request": return `${who}LLM turn (${short(event.messages)} messages)`;
      case "state.write": return `state: ${(event.keys || []).join(", ")}`;
      case "checkpoint": return `checkpoint ${event.seq}`;
      case "tree.tick": return `tick ${event.tick}: ${event.status}`;
      case "tree.finished": return `finished: ${event.status} ${event.reason || ""}`;
      default: return who + short(Object.assign({}, event, { type: undefined, time: undefined, node: undefined }));
    }
  }

  function short(value, limit = 120) {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    if (text === undefined) return "";
    return text.length > limit ? text.slice(0, limit - 1) + "\u2026" : text;
  }

  function renderTimeline() {
    const scrubber = $("scrubber");
    scrubber.max = view.events.length;
    scrubber.value = view.cursor;
    const current = view.events[view.cursor - 1];
    $("position").textContent = `event ${view.cursor} / ${view.events.length}` +
      (current ? ` \u00b7 ${current.type}` : "") + (view.ended ? "" : " \u00b7 live");
    const log = $("log");
    log.textContent = "";
    const start = Math.max(0, view.cursor - 60);
    const end = Math.min(view.events.length, view.cursor + 20);
    for (let i = start; i < end; i++) {
      const item = document.createElement("li");
      item.value = i + 1;
      item.textContent = `${view.events[i].type.padEnd(20)} ${describe(view.events[i])}`;
      if (i === view.cursor - 1) item.className = "current";
      item.addEventListener("click", () => { setFollow(false); moveTo(i + 1); });
      log.appendChild(item);
    }
    const current_item = log.querySelector(".current");
    if (current_item) current_item.scrollIntoView({ block: "nearest" });
  }

  function renderState() {
    $("state-at").textContent = `at event ${view.cursor}`;
    $("state").textContent = JSON.stringify(view.state, null, 2);
  }

  function renderPanel() {
    const node = view.tree.nodes[view.selected];
    const panel = $("node-panel");
    panel.classList.remove("muted");
    panel.textContent = "";
    const facts = document.createElement("dl");
    const rows = [
      ["name", node.name], ["kind", node.kind + (node.detail ? `: ${node.detail}` : "")],
      ["status", view.statuses[node.index]], ["source", node.location || "(not from a file)"],
      ["reads", node.reads.join(", ") || "-"], ["writes", node.writes.join(", ") || "-"],
    ];
    for (const [term, value] of rows) {
      const dt = document.createElement("dt"); dt.textContent = term;
      const dd = document.createElement("dd"); dd.textContent = value;
      dd.dataset.field = term;
      facts.append(dt, dd);
    }
    panel.appendChild(facts);
    const toggle = document.createElement("button");
    toggle.textContent = view.collapsed.has(node.index) ? "expand subtree" : "collapse subtree";
    toggle.addEventListener("click", () => toggleCollapse(node.index));
    panel.appendChild(toggle);
    if (node.source) {
      const source = document.createElement("pre");
      source.className = "source";
      source.textContent = node.source;
      panel.appendChild(source);
    }
    const calls = [];
    for (let i = view.cursor - 1; i >= 0 && calls.length < 8; i--) {
      const event = view.events[i];
      if (!/^(tool\.call\.|guard\.decision|llm\.response)/.test(event.type)) continue;
      if (nodeOf(event) === node.index) calls.push(event);
    }
    const title = document.createElement("h2");
    title.textContent = calls.length ? "Last calls" : "No calls yet";
    panel.appendChild(title);
    const list = document.createElement("ol");
    list.className = "calls";
    for (const event of calls) {
      const item = document.createElement("li");
      item.textContent = describe(event);
      list.appendChild(item);
    }
    panel.appendChild(list);
  }

  function select(index) {
    if (view.selected !== null && view.elements[view.selected]) view.elements[view.selected].classList.remove("selected");
    view.selected = index;
    if (view.elements[index]) view.elements[index].classList.add("selected");
    renderPanel();
  }

  // ---------------------------------------------------------------------- the event stream
  function connect() {
    // Resume after the last event this page has: after a dropped connection (or a server that
    // came back) nothing is missed and nothing is applied twice.
    // An EventSource cannot send headers: the token goes in the query.
    const query = `after=${view.events.length}&token=${encodeURIComponent(token())}`;
    const stream = new EventSource(`/api/events?${query}`);
    stream.addEventListener("error", () => {
      if (view.ended || stream.readyState === EventSource.OPEN) return;
      stream.close();
      setTimeout(connect, 500);
    });
    stream.addEventListener("run", (message) => {
      const id = Number(message.lastEventId);
      if (id <= view.events.length) return;  // already have it (a resumed stream)
      view.events.push(JSON.parse(message.data));
      if (view.follow) moveTo(view.events.length); else schedule();
    });
    stream.addEventListener("end", () => {
      stream.close();
      view.ended = true;
      schedule();
    });
    view.stream = stream;
  }

  function setFollow(on) {
    view.follow = on;
    $("follow").checked = on;
    if (on) moveTo(view.events.length);
  }

  // ------------------------------------------------------------------------------ controls
  function bindControls() {
    $("scrubber").addEventListener("input", (event) => { setFollow(false); moveTo(Number(event.target.value)); });
    $("first").addEventListener("click", () => { setFollow(false); moveTo(0); });
    $("prev").addEventListener("click", () => { setFollow(false); moveTo(view.cursor - 1); });
    $("next").addEventListener("click", () => { setFollow(false); moveTo(view.cursor + 1); });
    $("last").addEventListener("click", () => setFollow(true));
    $("follow").addEventListener("change", (event) => setFollow(event.target.checked));
    $("fork").addEventListener("click", actions.fork);
    $("token-form").addEventListener("submit", (event) => event.preventDefault());
    const fromHash = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
    const box = $("token");
    box.value = fromHash ? decodeURIComponent(fromHash[1]) : sessionStorage.getItem("jianmu-token") || "";
    box.addEventListener("change", () => {
      sessionStorage.setItem("jianmu-token", box.value);
      if (!view.ready) start();  // refused before: try again with this token
    });
    if (fromHash) sessionStorage.setItem("jianmu-token", box.value);
  }

  // For tests and scripts: the status a node shows now, by name.
  view.statusOf = (name) => view.statuses[view.byName.get(name)];
  view.moveTo = (cursor) => { setFollow(false); moveTo(cursor); };

  bindControls();
  function start() {
    loadTree().then(() => { connect(); view.ready = true; }).catch((exc) => {
      if (exc.message !== "no token") showProblems([`cannot load the tree: ${exc}`]);
    });
  }
  start();
})();
