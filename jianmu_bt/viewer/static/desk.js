// The jianmu viewer's desk: the questions a live run asks a person (an `ask` step, an MCP
// server's question) and the calls of external tools that wait for their result.
// `window.JianmuDesk(view, helpers)` returns `render()`, bound to the page's `view` (viewer.js),
// which supplies `withToken(headers)` and `escapeHidden(text)` (actions.js).
//
// What is open is read from the event stream: `input.requested` opens a question (its event
// carries the form's fields), `input.answered` closes it; `tool.call.waiting` (with the call's
// arguments and output schema) opens a call, `tool.call.completed`/`failed` closes it;
// `tree.finished` closes everything. Only a live run at its newest event shows them.
//
// Everything the run or a server wrote (the question, titles, choices, arguments, schemas) is
// shown as text (textContent), never as HTML, with control and invisible formatting characters
// written as escapes; long text starts folded behind "show all", which says how much is hidden.
// A value the run refuses (it does not fit the form or the output schema) is said next to the
// item, which stays open.
"use strict";

window.JianmuDesk = function (view, { withToken, escapeHidden }) {
  const $ = (id) => document.getElementById(id);
  // Text longer than this starts folded behind "show all".
  const FOLDED_CHARS = 300;
  // A choice with at most this many options is a row of radio buttons, else a select.
  const RADIO_CHOICES = 4;

  function escapeText(text) {
    // A person's text: line breaks and tabs kept, every other hidden character escaped.
    return String(text).split("\n").map((line) => line.split("\t").map(escapeHidden).join("\t")).join("\n");
  }

  function jsonText(value) {
    const text = JSON.stringify(value === undefined ? null : value);
    return escapeHidden(text === undefined ? String(value) : text);
  }

  function folded(full, className) {
    // A span with `full` (already made safe), folded behind "show all" when long.
    const box = document.createElement("span");
    box.className = className;
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = full;
    box.append(text);
    if (full.length <= FOLDED_CHARS) return box;
    const toggle = document.createElement("button");
    toggle.className = "show-all";
    let open = false;
    const show = () => {
      text.textContent = open ? full : `${full.slice(0, FOLDED_CHARS)}\u2026`;
      toggle.textContent = open ? "show less" : `show all (${full.length - FOLDED_CHARS} more characters)`;
    };
    toggle.addEventListener("click", () => { open = !open; show(); });
    show();
    box.append(" ", toggle);
    return box;
  }

  function element(tag, className, text) {
    const made = document.createElement(tag);
    if (className) made.className = className;
    if (text !== undefined) made.textContent = text;
    return made;
  }

  // ------------------------------------------------------------------------------ what waits
  function open() {
    // The questions and external calls open at the cursor.
    const questions = new Map();
    const calls = new Map();
    for (let i = 0; i < view.cursor; i++) {
      const event = view.events[i];
      if (event.type === "tree.finished") { questions.clear(); calls.clear(); }
      else if (event.type === "input.requested") questions.set(event.question_id, event);
      else if (event.type === "input.answered") questions.delete(event.question_id);
      else if (event.type === "tool.call.waiting" && "arguments" in event) calls.set(event.call_id, event);
      else if (event.type === "tool.call.completed" || event.type === "tool.call.failed") calls.delete(event.call_id);
    }
    return [[...questions.values()], [...calls.values()]];
  }

  function render() {
    const live = view.tree.mode === "live" && view.cursor === view.events.length;
    const [questions, calls] = live ? open() : [[], []];
    fill("questions", "question", "questionId", questions, (q) => q.question_id, questionCard);
    fill("results", "waiting-call", "callId", calls, (c) => c.call_id, callCard);
  }

  function fill(section, className, key, items, idOf, card) {
    const box = $(section);
    box.hidden = !items.length;
    const list = $(`${section}-list`);
    const shown = [...list.children].map((child) => child.dataset[key]).join(",");
    if (shown === items.map(idOf).join(",")) return;  // keep what was typed
    const kept = new Map([...list.children].map((child) => [child.dataset[key], child]));
    list.textContent = "";
    for (const item of items) {
      let made = kept.get(idOf(item));
      if (!made) {
        made = card(item);
        made.classList.add(className);
        made.dataset[key] = idOf(item);
      }
      list.appendChild(made);
    }
  }

  // ------------------------------------------------------------------------------- questions
  function questionCard(question) {
    const card = element("div");
    const asker = question.source === "tree" ? `step ${question.server} asks` : `MCP server '${question.server}' asks`;
    card.append(element("div", "asker", `${escapeHidden(asker)} [${escapeHidden(String(question.question_id))}]`));
    card.append(folded(escapeText(question.message || ""), "message"));
    const fields = element("div", "fields");
    const readers = (question.fields || []).map((field) => {
      const [row, read] = fieldRow(question.question_id, field);
      fields.append(row);
      return read;
    });
    const answer = element("button", "answer", "Answer");
    const decline = element("button", "decline", "Decline");
    const reason = element("input", "reason");
    reason.placeholder = "reason (for declining)";
    const error = element("div", "answer-error error");
    answer.addEventListener("click", () => {
      const content = {};
      for (const read of readers) {
        const [name, value] = read();
        if (value !== undefined) content[name] = value;
      }
      send("/api/answer", { question_id: question.question_id, action: "accept", content }, error);
    });
    decline.addEventListener("click", () => send("/api/answer",
      { question_id: question.question_id, action: "decline", reason: reason.value }, error));
    card.append(fields, answer, decline, reason, error);
    return card;
  }

  function fieldRow(questionId, field) {
    // A row for one field: its label, its control and a function reading [name, value] (value
    // undefined: left out). Defaults are filled in.
    const row = element("div", "field");
    row.dataset.field = field.name;
    const title = field.title && field.title !== field.name ? `${field.title} (${field.name})` : field.name;
    row.append(element("span", "label", escapeHidden(title) + (field.required ? " *" : "")));
    if (field.description) row.append(element("span", "help", escapeText(field.description)));
    const has = "default" in field;
    const control = element("span", "control");
    row.append(control);
    const group = `${questionId}:${field.name}`;
    if (field.choices.length && field.multiple) {
      const chosen = new Set(has && Array.isArray(field.default) ? field.default : []);
      const boxes = field.choices.map(([value, label]) => choiceInput(control, "checkbox", group, value, label, chosen.has(value)));
      return [row, () => [field.name, boxes.filter((box) => box.checked).map((box) => box.value)]];
    }
    if (field.choices.length && field.choices.length <= RADIO_CHOICES) {
      const radios = field.choices.map(([value, label]) => choiceInput(control, "radio", group, value, label, has && field.default === value));
      return [row, () => { const on = radios.find((radio) => radio.checked); return [field.name, on ? on.value : undefined]; }];
    }
    if (field.choices.length) {
      const select = element("select", "choice");
      select.name = group;
      select.append(element("option", "", "(choose)"));
      select.firstChild.value = "";
      for (const [value, label] of field.choices) {
        const option = element("option", "", escapeHidden(label === value ? value : `${label} (${value})`));
        option.value = value;
        option.selected = has && field.default === value;
        select.append(option);
      }
      control.append(select);
      return [row, () => [field.name, select.value === "" ? undefined : select.value]];
    }
    if (field.type === "boolean") {
      const box = element("input", "value");
      box.type = "checkbox";
      box.name = group;
      box.checked = has && field.default === true;
      control.append(box);
      return [row, () => [field.name, box.checked]];
    }
    const numeric = field.type === "number" || field.type === "integer";
    const input = element(numeric || field.schema.format ? "input" : "textarea", "value");
    input.name = group;
    if (numeric) {
      input.type = "number";
      input.step = field.type === "integer" ? "1" : "any";
      if (field.schema.minimum !== undefined) input.min = field.schema.minimum;
      if (field.schema.maximum !== undefined) input.max = field.schema.maximum;
    } else if (input.tagName === "TEXTAREA") {
      input.rows = 2;
    }
    if (field.schema.format) input.placeholder = field.schema.format;
    if (has) input.value = String(field.default);
    control.append(input);
    return [row, () => {
      const text = input.value;
      if (text === "") return [field.name, undefined];  // left out (required: the run says so)
      if (!numeric) return [field.name, text];
      const number = Number(text);
      return [field.name, Number.isFinite(number) ? number : text];  // the run says why not
    }];
  }

  function choiceInput(control, type, group, value, label, checked) {
    const wrap = element("label", "choice");
    const input = element("input");
    input.type = type; input.name = group; input.value = value; input.checked = checked;
    wrap.append(input, " ", escapeHidden(label));
    control.append(wrap);
    return input;
  }

  // --------------------------------------------------------------------- external results
  function callCard(call) {
    const card = element("div");
    const what = element("div", "what");
    what.append(`${escapeHidden(String(call.node || ""))}: ${escapeHidden(String(call.tool))} `,
      folded(jsonText(call.arguments), "arguments"), ` [${escapeHidden(String(call.call_id))}]`);
    const schema = element("div", "schema");
    schema.append("result: ", call.schema ? folded(jsonText(call.schema), "output-schema") : "any JSON value");
    const deadline = element("div", "deadline", call.deadline
      ? `deadline: ${new Date(call.deadline * 1000).toLocaleString()} (then its default, or it fails)`
      : "no deadline");
    const text = element("textarea", "result-value");
    text.rows = 3; text.spellcheck = false;
    text.placeholder = "the result, as JSON";
    const supply = element("button", "supply", "Give result");
    const error = element("div", "result-error error");
    supply.addEventListener("click", () => send("/api/result", { call_id: call.call_id, value_json: text.value }, error));
    card.append(what, schema, deadline, text, supply, error);
    return card;
  }

  async function send(path, body, error) {
    // The run checks the value: its refusal is shown here, and the item stays open.
    error.textContent = "";
    try {
      const response = await fetch(path, {
        method: "POST",
        headers: withToken({ "content-type": "application/json" }),
        body: JSON.stringify(body),
      });
      if (response.ok) return;
      const said = await response.json().catch(() => ({}));
      error.textContent = `${response.status}: ${escapeText(String(said.error || response.statusText))}`;
    } catch (exc) {
      error.textContent = `the viewer's server does not answer: ${exc}`;
    }
  }

  return { render };
};
