// memfold's memory page: a thin client of /api/v1 (no build step, no third-party code).
// Every text from memory is put in the page with textContent, never parsed as HTML.
"use strict";

const API = "/api/v1";
const DEFAULT_USER = "~";
const KEY_STORE = "memfold.apiKey";
const SECTIONS = [
  ["workContext", "Work"], ["personalContext", "Personal"], ["topOfMind", "Current focus"],
  ["recentMonths", "Recent months"], ["earlierContext", "Earlier context"],
  ["longTermBackground", "Long-term background"],
];
const CATEGORIES = ["correction", "preference", "goal", "behavior", "knowledge", "context"];
const state = { me: null, users: [], user: DEFAULT_USER, agent: "", doc: null, tab: "facts" };

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, { query, body } = {}) {
  const url = new URL(API + path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== null && value !== undefined && value !== "") url.searchParams.set(name, value);
  }
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers.Authorization = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error || {};
    throw new ApiError(response.status, error.code || "error", error.message || response.statusText);
  }
  return data;
}

function scopePath(rest) {
  return "/users/" + encodeURIComponent(state.user) + rest;
}

function scopeQuery(extra = {}) {
  return { agent: state.agent || null, ...extra };
}

let noticeTimer = null;

function notify(message, ok = false) {
  const box = $("notice");
  box.textContent = message;
  box.className = ok ? "notice ok" : "notice";
  box.hidden = !message;
  clearTimeout(noticeTimer);
  if (ok && message) noticeTimer = setTimeout(() => { box.hidden = true; }, 4000);
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) {
    notify("This server needs an API key: " + error.message);
    $("key-dialog").showModal();
  } else {
    notify(error.message || String(error));
  }
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

// --- who, users, agents ----------------------------------------------------------------

async function loadMe() {
  state.me = await api("GET", "/me");
  if (!state.me.admin) state.user = state.me.user_id;
  $("who").textContent = state.me.admin
    ? "admin" + (state.me.via === "open" ? " (no key needed on this address)" : "")
    : "signed in as " + state.me.user_id;
}

async function loadUsers() {
  let users;
  try {
    users = (await api("GET", "/users")).users;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 404) throw error;
    users = null; // an older server without /users: type the id
  }
  const select = $("user");
  const text = $("user-text");
  select.replaceChildren();
  if (users === null) {
    select.hidden = true;
    text.hidden = false;
    text.value = state.user === DEFAULT_USER ? "" : state.user;
    fillAgents();
    return;
  }
  state.users = users;
  if (!state.me.admin) users = users.filter((u) => u.user_id === state.me.user_id);
  if (!state.me.admin && users.length === 0) {
    users = [{ user_id: state.me.user_id, agents: [], facts: 0 }];
  }
  for (const user of users) {
    const id = user.user_id === null ? DEFAULT_USER : user.user_id;
    const label = (user.user_id === null ? "(default user)" : user.user_id) + ` (${user.facts} facts)`;
    select.append(el("option", { value: id, text: label }));
  }
  if (state.me.admin) select.append(el("option", { value: "__other__", text: "other user…" }));
  const known = users.some((u) => (u.user_id === null ? DEFAULT_USER : u.user_id) === state.user);
  if (!known && state.me.admin && state.user !== DEFAULT_USER) {
    // a user picked by hand who has no memory yet
    users.push({ user_id: state.user, agents: [], facts: 0 });
    select.insertBefore(el("option", { value: state.user, text: state.user + " (0 facts)" }), select.lastChild);
  } else if (!known && users.length) {
    state.user = users[0].user_id === null ? DEFAULT_USER : users[0].user_id;
  }
  select.value = state.user;
  fillAgents();
}

function fillAgents() {
  const select = $("agent");
  const user = state.users.find((u) => (u.user_id === null ? DEFAULT_USER : u.user_id) === state.user);
  const agents = new Set(user ? user.agents : []);
  if (state.agent) agents.add(state.agent);
  select.replaceChildren(el("option", { value: "", text: "shared (all agents)" }));
  for (const agent of [...agents].sort()) select.append(el("option", { value: agent, text: agent }));
  select.append(el("option", { value: "__other__", text: "other agent…" }));
  select.value = state.agent;
}

// --- facts ----------------------------------------------------------------------------

async function loadMemory() {
  state.doc = await api("GET", scopePath("/memory"), { query: scopeQuery() });
  renderFacts();
  renderSummaries();
}

function renderFacts() {
  const facts = state.doc.facts || [];
  const box = $("facts");
  box.replaceChildren();
  const seen = new Set(CATEGORIES);
  for (const fact of facts) seen.add(fact.category);
  $("categories").replaceChildren(...[...seen].map((c) => el("option", { value: c })));
  $("facts-summary").textContent = facts.length
    ? `${facts.length} fact(s) · revision ${state.doc.revision}`
    : "No facts yet. Add one above, or let an agent record conversations.";
  const order = [...CATEGORIES, ...[...seen].filter((c) => !CATEGORIES.includes(c)).sort()];
  for (const category of order) {
    const group = facts.filter((f) => f.category === category)
      .sort((a, b) => b.confidence - a.confidence);
    if (!group.length) continue;
    box.append(el("div", { class: "category", "data-category": category },
      el("h3", { text: `${category} (${group.length})` }),
      ...group.map(factCard)));
  }
}

function factCard(fact) {
  const source = fact.source === "manual" ? "added by hand" : (fact.source ? "thread " + fact.source : "");
  return el("article", { class: "fact", "data-fact-id": fact.id },
    el("p", { class: "content", text: fact.content }),
    fact.sourceError ? el("p", { class: "avoid", text: "avoid: " + fact.sourceError }) : null,
    el("div", { class: "facts-meta" },
      el("span", { class: "conf", title: "confidence", text: fact.confidence.toFixed(2) }),
      source ? el("span", { class: "source", text: source }) : null,
      el("span", { class: "time", title: fact.createdAt, text: when(fact.updatedAt || fact.createdAt) }),
      el("span", { class: "id", text: fact.id })),
    el("div", { class: "actions" },
      el("button", { type: "button", class: "quiet", text: "Edit", onclick: (event) => editFact(event.target.closest(".fact"), fact) }),
      el("button", { type: "button", class: "quiet", text: "Why?", onclick: (event) => why(event.target.closest(".fact"), fact) }),
      el("button", { type: "button", class: "danger", text: "Delete", onclick: () => deleteFact(fact) })));
}

function editFact(card, fact) {
  const content = el("textarea", { name: "content", rows: 2, "aria-label": "Fact text" });
  content.value = fact.content;
  const category = el("input", { name: "category", list: "categories", value: fact.category, size: 12 });
  const confidence = el("input", {
    name: "confidence", type: "number", min: 0, max: 1, step: 0.05, value: fact.confidence,
  });
  const form = el("form", { class: "edit" }, content,
    el("div", { class: "row" },
      el("label", {}, "Category", category), el("label", {}, "Confidence", confidence),
      el("button", { type: "submit", text: "Save" }),
      el("button", { type: "button", class: "quiet", text: "Cancel", onclick: renderFacts })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const patch = {};
    if (content.value.trim() !== fact.content) patch.content = content.value.trim();
    if (category.value.trim() && category.value.trim() !== fact.category) patch.category = category.value.trim();
    if (Number(confidence.value) !== fact.confidence) patch.confidence = Number(confidence.value);
    if (!Object.keys(patch).length) return renderFacts();
    try {
      await api("PATCH", scopePath("/facts/" + encodeURIComponent(fact.id)), { query: scopeQuery(), body: patch });
      notify("Saved.", true);
      await refresh();
    } catch (error) { failed(error); }
  });
  card.replaceChildren(form);
  content.focus();
}

async function deleteFact(fact) {
  if (!confirm(`Delete this fact?\n\n${fact.content}`)) return;
  try {
    await api("DELETE", scopePath("/facts/" + encodeURIComponent(fact.id)), { query: scopeQuery() });
    notify("Deleted.", true);
    await refresh();
  } catch (error) { failed(error); }
}

async function why(card, fact) {
  const old = card.querySelector(".why");
  if (old) return old.remove();
  const box = el("div", { class: "why", text: "…" });
  card.append(box);
  try {
    const found = await api("GET", scopePath("/facts/" + encodeURIComponent(fact.id) + "/why"), { query: scopeQuery() });
    box.replaceChildren(...provenanceLines(found));
  } catch (error) {
    box.textContent = error.status === 404 && error.code === "not_found" ? "This server cannot explain facts." : error.message;
  }
}

function provenanceLines(found) {
  const lines = [];
  const origin = found.origin;
  if (origin) {
    const by = origin.actor === "manual" ? "added by hand" : `learned by ${origin.extractor || origin.actor}`;
    lines.push(el("div", { text: `${by}${origin.threadId ? " in thread " + origin.threadId : ""}, ${when(origin.at)}` }));
    if (origin.excerpt) lines.push(el("div", { text: "from the user's words: “" + origin.excerpt + "”" }));
  } else {
    lines.push(el("div", { text: `created ${when(found.createdAt)}${found.threadId ? " in thread " + found.threadId : ""} (before the kept history)` }));
  }
  for (const change of found.changes || []) {
    if (origin && change.revision === origin.revision && change.kind === origin.kind) continue;
    lines.push(el("div", { text: `${change.kind} ${when(change.at)}${change.reason ? ": " + change.reason : ""}` }));
  }
  for (const ref of found.supersedes || []) lines.push(el("div", { text: "replaced: " + ref.content }));
  if (found.supersededBy) lines.push(el("div", { text: "replaced by: " + found.supersededBy.content }));
  return lines;
}

// --- summaries ------------------------------------------------------------------------

function renderSummaries() {
  const box = $("summaries");
  box.replaceChildren();
  const groups = { ...state.doc.user, ...state.doc.history };
  for (const [section, title] of SECTIONS) {
    const current = groups[section] || { summary: "", updatedAt: "" };
    const text = el("textarea", { rows: 3, name: section, "aria-label": title });
    text.value = current.summary;
    const form = el("form", { class: "summary", "data-section": section },
      el("label", {}, `${title}${current.updatedAt ? " · " + when(current.updatedAt) : ""}`, text),
      el("div", { class: "row" }, el("button", { type: "submit", text: "Save" })));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await api("PUT", scopePath("/summaries/" + section), { query: scopeQuery(), body: { summary: text.value } });
        notify(`${title} saved.`, true);
        await refresh();
      } catch (error) { failed(error); }
    });
    box.append(form);
  }
}

// --- history, preview, search ---------------------------------------------------------

async function loadHistory() {
  const list = $("history");
  let events;
  try {
    events = (await api("GET", scopePath("/history"), { query: scopeQuery({ limit: 200 }) })).events;
  } catch (error) {
    list.replaceChildren(el("li", { text: error.message }));
    return;
  }
  if (!events.length) list.replaceChildren(el("li", { text: "No changes recorded yet." }));
  else list.replaceChildren(...events.map(historyItem));
}

function sectionTitle(section) {
  const found = SECTIONS.find(([name]) => name === section);
  return found ? found[1] : section;
}

function historyItem(event) {
  const what = event.after || event.before || "";
  const from = [
    event.actor === "manual" ? "by hand" : event.extractor ? "by " + event.extractor : event.actor,
    event.threadId ? "thread " + event.threadId : "",
    event.reason || "",
  ].filter(Boolean).join(" · ");
  return el("li", { "data-kind": event.kind },
    el("span", { class: "kind", text: event.kind.replace("_", " ") + (event.section ? " · " + sectionTitle(event.section) : "") }), " ",
    el("span", { class: "when", text: when(event.at) }),
    what ? el("div", { text: what }) : null,
    event.excerpt ? el("div", { class: "from", text: "“" + event.excerpt + "”" }) : null,
    el("div", { class: "from", text: from }));
}

async function loadPreview() {
  const budget = $("budget").value;
  const query = $("preview-query").value.trim();
  try {
    const report = await api("GET", scopePath("/context"), { query: scopeQuery({ max_tokens: budget, query }) });
    if (!budget) $("budget").value = report.budget;
    $("preview-meta").textContent = `${report.tokens} of ${report.budget} tokens · ${report.included.length} item(s) in, ${report.dropped.length} left out`;
    $("preview-text").textContent = report.text || "(nothing would be injected: this memory is empty)";
    $("preview-dropped").replaceChildren(...(report.dropped.length ? report.dropped.map((item) =>
      el("li", { "data-id": item.id }, item.content || item.id, " ",
        el("span", { class: "reason", text: `(${item.reason}${item.tokens ? ", " + item.tokens + " tokens" : ""})` })))
      : [el("li", { text: "Nothing: everything fits." })]));
  } catch (error) {
    $("preview-meta").textContent = error.message;
  }
}

async function runSearch(event) {
  event.preventDefault();
  const q = $("search-q").value.trim();
  if (!q) return;
  try {
    const { hits } = await api("GET", scopePath("/search"), { query: scopeQuery({ q, limit: 20 }) });
    $("search-hits").replaceChildren(...(hits.length ? hits.map((hit) =>
      el("li", {}, hit.fact.content, " ",
        el("span", { class: "reason", text: `${hit.fact.category} · ${hit.fact.confidence.toFixed(2)} · score ${hit.score.toFixed(2)}` })))
      : [el("li", { text: "No matching facts." })]));
  } catch (error) { failed(error); }
}

async function loadQueue() {
  const box = $("queue");
  try {
    const { queue, extractor } = await api("GET", "/status");
    box.textContent = `Queue: ${queue.pending} pending, ${queue.in_flight} running, ${queue.processed} processed, ${queue.failed} failed · extractor: ${extractor}`;
    box.hidden = false;
  } catch (error) {
    box.hidden = true;
  }
}

// --- wiring ---------------------------------------------------------------------------

async function refresh() {
  await loadMemory();
  if (!$("user").hidden) await loadUsers();
  if (state.tab === "history") await loadHistory();
  if (state.tab === "preview") await loadPreview();
  loadQueue();
}

function showTab(name) {
  state.tab = name;
  for (const button of document.querySelectorAll(".tabs button")) {
    button.setAttribute("aria-selected", String(button.dataset.tab === name));
  }
  for (const tab of document.querySelectorAll(".tab")) tab.hidden = tab.id !== "tab-" + name;
  if (name === "history") loadHistory();
  if (name === "preview") loadPreview();
}

async function start() {
  try {
    await loadMe();
    await loadUsers();
    await refresh();
    notify("");
  } catch (error) { failed(error); }
}

function wire() {
  for (const button of document.querySelectorAll(".tabs button")) {
    button.addEventListener("click", () => showTab(button.dataset.tab));
  }
  $("user").addEventListener("change", (event) => {
    let value = event.target.value;
    if (value === "__other__") value = (prompt("User id") || "").trim() || state.user;
    state.user = value;
    state.agent = "";
    if (!state.users.some((u) => (u.user_id ?? DEFAULT_USER) === value)) {
      state.users.push({ user_id: value, agents: [], facts: 0 });
      $("user").append(el("option", { value, text: value }));
    }
    $("user").value = value;
    fillAgents();
    refresh().catch(failed);
  });
  $("user-text").addEventListener("change", (event) => {
    state.user = event.target.value.trim() || DEFAULT_USER;
    refresh().catch(failed);
  });
  $("agent").addEventListener("change", (event) => {
    let value = event.target.value;
    if (value === "__other__") value = (prompt("Agent name") || "").trim() || state.agent;
    state.agent = value;
    fillAgents();
    refresh().catch(failed);
  });
  $("scope").addEventListener("submit", (event) => {
    event.preventDefault();
    start();
  });
  $("add-fact").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const body = { content: form.content.value.trim() };
    if (form.category.value.trim()) body.category = form.category.value.trim();
    if (form.confidence.value !== "") body.confidence = Number(form.confidence.value);
    try {
      await api("POST", scopePath("/facts"), { query: scopeQuery(), body });
      form.content.value = "";
      notify("Added.", true);
      await refresh();
    } catch (error) { failed(error); }
  });
  $("preview-form").addEventListener("submit", (event) => {
    event.preventDefault();
    loadPreview();
  });
  $("search-form").addEventListener("submit", runSearch);
  $("sign-in").addEventListener("click", () => $("key-dialog").showModal());
  $("key-form").addEventListener("submit", (event) => {
    const choice = event.submitter ? event.submitter.value : "save";
    const key = $("key-input").value.trim();
    if (choice === "forget" || !key) sessionStorage.removeItem(KEY_STORE);
    else sessionStorage.setItem(KEY_STORE, key);
    $("key-input").value = "";
    state.user = DEFAULT_USER;
    setTimeout(start, 0);
  });
  start();
}

document.addEventListener("DOMContentLoaded", wire);
