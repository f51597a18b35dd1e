// The Observatory page: the session list (live, searchable, filtered), one
// session as a graph (main chain, branches forking from their thoughts,
// revisions pointing back), exports and analysis. Data from /api, live
// updates from /ws (frames { type, sessionId, payload }, see
// docs/observatory.md). The cookie set at login authenticates both.
"use strict";

const state = {
  sessions: new Map(), // id -> ObservatorySession (+ matches)
  order: [],           // ids as listed
  total: null,         // how many sessions the list's filters match (null: unknown)
  hasMore: false,      // the server has more past those listed
  open: null,          // id of the session shown
  snapshot: null,      // its SessionSnapshotPayload
  fresh: new Set(),    // node ids that arrived live
  selected: null,
  socket: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

// Text from the ledger (titles, tags, thoughts, branch ids), isolated from
// what is drawn around it, with its explicit bidi controls shown as marks
// in their place instead of obeyed: "\u202egnp.exe" reads "⟨RLO⟩gnp.exe",
// not "exe.png" (the disguise known as Trojan Source).
const BIDI_CONTROLS = /([\u202a-\u202e\u2066-\u2069])/;
const BIDI_NAMES = {
  "\u202a": "LRE", "\u202b": "RLE", "\u202c": "PDF", "\u202d": "LRO", "\u202e": "RLO",
  "\u2066": "LRI", "\u2067": "RLI", "\u2068": "FSI", "\u2069": "PDI",
};
const bidiMark = (c) => `\u27e8${BIDI_NAMES[c]}\u27e9`;
const bidiTitle = (c) => `U+${c.codePointAt(0).toString(16).toUpperCase()}, a bidi control, shown instead of obeyed`;
// Split at the controls: odd indices are controls.
const bidiParts = (text) => String(text).split(BIDI_CONTROLS);
const user = (text) => el("bdi", {}, ...bidiParts(text).map((part, i) =>
  i % 2 ? el("span", { class: "bidi-control", title: bidiTitle(part) }, bidiMark(part)) : part).filter((p) => p !== ""));
const userSvg = (text) => svg("tspan", { class: "user" }, ...bidiParts(text).map((part, i) =>
  i % 2 ? svg("tspan", { class: "bidi-control" }, bidiMark(part)) : part).filter((p) => p !== ""));
// An <option> holds text only: its label's controls become marks and the
// rest is isolated with FSI ... PDI.
const userLabel = (text) => "\u2068" + bidiParts(text).map((part, i) => i % 2 ? bidiMark(part) : part).join("") + "\u2069";

function joined(items, separator) {
  const out = [];
  items.forEach((item, i) => {
    if (i) out.push(separator);
    out.push(item);
  });
  return out;
}

async function getJson(url) {
  const r = await fetch(url, { credentials: "same-origin" });
  if (r.status === 401) { location.href = "/login"; throw new Error("signed out"); }
  if (!r.ok) {
    const e = new Error((await r.json().catch(() => ({}))).error || r.statusText);
    e.status = r.status;
    throw e;
  }
  return r.json();
}

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

// ---- the list ------------------------------------------------------------

function filters() {
  const p = new URLSearchParams();
  const search = $("search").value.trim();
  if (search) p.set("search", search);
  if ($("project").value) p.set("project", $("project").value);
  if ($("tag").value) p.set("tag", $("tag").value);
  return p;
}

const PAGE = 50;
let listAsked = 0; // the latest list request: an older answer is dropped

// The list's first page (`more`: the next page, after those listed).
async function loadList(more) {
  const p = filters();
  p.set("limit", PAGE);
  if (more === true) p.set("offset", state.order.length);
  const asked = ++listAsked;
  const answer = await getJson("/api/sessions?" + p);
  if (asked !== listAsked) return;
  if (more !== true) {
    state.sessions = new Map();
    state.order = [];
  }
  for (const s of answer.sessions) {
    // A session created since the first page moved the rest down by one.
    if (!state.sessions.has(s.id)) state.order.push(s.id);
    state.sessions.set(s.id, s);
  }
  state.total = answer.total ?? null;
  state.hasMore = !!answer.hasMore;
  renderList();
}

const plural = (n, one) => `${n} ${one}${n === 1 ? "" : one.endsWith("h") ? "es" : "s"}`;

function forget(id) {
  state.sessions.delete(id);
  const at = state.order.indexOf(id);
  if (at >= 0) {
    state.order.splice(at, 1);
    if (state.total !== null) state.total = Math.max(0, state.total - 1);
  }
  renderList();
}

function renderList() {
  const ul = $("sessions");
  ul.replaceChildren();
  for (const id of state.order) {
    const s = state.sessions.get(id);
    if (!s) continue;
    const li = el("li", { "data-session-id": s.id, class: s.id === state.open ? "open" : "" },
      el("div", { class: "title status-" + s.status }, user(s.title || s.id)),
      el("div", { class: "meta" },
        `${plural(s.thoughtCount, "thought")} · ${plural(s.branchCount, "branch")} · ${when(s.createdAt)}`,
        ...(s.tags.length ? [" · ", ...joined(s.tags.map(user), ", ")] : [])));
    for (const m of (s.matches || []).slice(0, 2)) {
      li.append(el("div", { class: "match" }, `#${m.thoughtNumber}`,
        ...(m.branchId ? [" (", user(m.branchId), ")"] : []), ": ", user(m.snippet || "")));
    }
    li.addEventListener("click", () => openSession(s.id));
    ul.append(li);
  }
  $("list-empty").hidden = state.order.length > 0;
  const shown = state.order.length;
  $("list-count").textContent = state.total !== null
    ? `${shown} of ${state.total}`
    : `${shown}${state.hasMore ? "+" : ""}`;
  $("list-count").hidden = shown === 0;
  $("more").hidden = !state.hasMore;
}

async function loadTags() {
  const answer = await getJson("/api/tags");
  for (const [select, items] of [[$("project"), answer.projects], [$("tag"), answer.tags]]) {
    const keep = select.value;
    select.replaceChildren(select.firstElementChild);
    for (const t of items) select.append(el("option", { value: t.name }, `${userLabel(t.name)} (${t.count})`));
    select.value = keep;
  }
}

function listed(session) {
  // A live session shown only when no search or filter would hide it.
  const p = filters();
  if (p.get("search")) return false;
  if (p.get("project") && !session.tags.includes("project:" + p.get("project"))) return false;
  if (p.get("tag") && !session.tags.includes(p.get("tag"))) return false;
  return true;
}

// ---- one session ---------------------------------------------------------

async function openSession(id) {
  state.open = id;
  state.fresh.clear();
  state.selected = null;
  renderList();
  let snapshot;
  try {
    snapshot = await getJson("/api/sessions/" + encodeURIComponent(id));
  } catch (e) {
    if (state.open !== id) return;
    if (e.status === 404) gone(id, e.message);
    else showFailure(`The session could not be read: ${e.message}`);
    return;
  }
  if (state.open !== id) return;
  showSnapshot(snapshot);
  $("export-json").href = `/api/sessions/${encodeURIComponent(id)}/export?format=json`;
  $("export-md").href = `/api/sessions/${encodeURIComponent(id)}/export?format=markdown`;
  $("analysis").hidden = true;
  $("detail").hidden = true;
  subscribe({ type: "subscribe", sessionId: id });
  showThread(id);
}

// The session as a thread: its status, parent, children and links, each a
// link that opens that session.
async function showThread(id) {
  const nav = $("session-thread");
  nav.hidden = true;
  nav.replaceChildren();
  let t;
  try {
    t = await getJson(`/api/sessions/${encodeURIComponent(id)}/thread`);
  } catch (e) {
    return;
  }
  if (state.open !== id) return;
  const link = (other) => {
    const a = el("a", { href: "#", "data-thread-id": other }, user(t.titles[other] || other.slice(0, 8)));
    a.addEventListener("click", (ev) => {
      ev.preventDefault();
      openSession(other);
    });
    return a;
  };
  const part = (label, ids, cls) => {
    if (!ids.length) return null;
    const span = el("span", { class: cls }, label + ": ");
    ids.forEach((other, i) => {
      if (i) span.append(", ");
      span.append(link(other));
    });
    return span;
  };
  const parts = [
    el("span", { class: "thread-status" }, "thread " + t.thread.status),
    t.thread.parent_id ? part("parent", [t.thread.parent_id], "thread-parent") : null,
    part("children", t.relations.children, "thread-children"),
    part("depends on", t.relations.depends_on, "thread-depends"),
    part("references", t.relations.references_to.filter((r) => t.titles[r]), "thread-references"),
    part("referenced by", t.relations.referenced_by, "thread-referenced"),
  ].filter(Boolean);
  parts.forEach((p, i) => {
    if (i) nav.append(" · ");
    nav.append(p);
  });
  nav.hidden = false;
}

// The session shown is not found (deleted since it was listed): out of
// the list, and said so.
function gone(id, message) {
  forget(id);
  if (state.open === id) showFailure(`That session is gone (${message}). Choose another on the left.`);
}

function showFailure(text) {
  state.open = null;
  state.snapshot = null;
  renderList();
  $("session-view").hidden = true;
  $("session-empty").hidden = false;
  $("session-empty").textContent = text;
}

function showSnapshot(snapshot) {
  state.snapshot = snapshot;
  $("session-empty").hidden = true;
  $("session-view").hidden = false;
  $("session-view").dataset.sessionId = snapshot.session.id;
  $("session-title").replaceChildren(user(snapshot.session.title || snapshot.session.id));
  const s = snapshot.session;
  $("session-meta").replaceChildren(
    `${s.status} · started ${when(s.createdAt)}` + (s.completedAt ? ` · completed ${when(s.completedAt)}` : "") +
    ` · ${s.id}`,
    ...(s.tags.length ? [" · ", ...joined(s.tags.map(user), ", ")] : []),
    snapshot.partial ? " · too large to draw whole: its first thoughts are shown (Export JSON has them all)" : "");
  renderGraph();
}

function addThought(thought) {
  const snap = state.snapshot;
  if (!snap) return;
  const chain = thought.branchId
    ? (snap.branches[thought.branchId] ||= { id: thought.branchId, name: null, fromThoughtNumber: thought.branchFromThought, thoughts: [] }).thoughts
    : snap.thoughts;
  if (chain.some((t) => t.id === thought.id)) return;
  chain.push(thought);
  chain.sort((a, b) => a.thoughtNumber - b.thoughtNumber);
  state.fresh.add(thought.id);
  renderGraph();
}

const ROW = 64, LANE = 260, TOP = 40, LEFT = 80;

function renderGraph() {
  const snap = state.snapshot;
  const g = $("graph");
  g.replaceChildren();
  const defs = svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" },
    svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8e44ad" })));
  g.append(defs);
  const lanes = [{ id: null, title: ["main chain"], thoughts: snap.thoughts }];
  for (const b of Object.values(snap.branches)) lanes.push({ id: b.id, title: ["branch ", userSvg(b.id), ` (from #${b.fromThoughtNumber})`], from: b.fromThoughtNumber, thoughts: b.thoughts });
  const pos = new Map(); // "lane:number" -> {x, y}
  const key = (lane, n) => `${lane ?? ""}:${n}`;
  let maxRow = 1;
  lanes.forEach((lane, i) => {
    const x = LEFT + i * LANE;
    g.append(svg("text", { x: x - 10, y: 18, class: "lane" }, ...lane.title));
    for (const t of lane.thoughts) {
      const y = TOP + (t.thoughtNumber - 1) * ROW;
      maxRow = Math.max(maxRow, t.thoughtNumber);
      pos.set(key(lane.id, t.thoughtNumber), { x, y });
    }
  });
  const edges = svg("g", {});
  g.append(edges);
  for (const lane of lanes) {
    let prev = null;
    for (const t of lane.thoughts) {
      const here = pos.get(key(lane.id, t.thoughtNumber));
      if (prev) edges.append(svg("line", { class: "edge", x1: prev.x, y1: prev.y, x2: here.x, y2: here.y }));
      else if (lane.id !== null) {
        const fork = pos.get(key(null, lane.from));
        if (fork) edges.append(svg("path", { class: "edge fork", "data-fork": lane.id, d: `M${fork.x},${fork.y} C${fork.x + LANE / 2},${fork.y} ${here.x - LANE / 2},${here.y} ${here.x},${here.y}` }));
      }
      prev = here;
      if (t.isRevision && t.revisesThought) {
        const target = pos.get(key(lane.id, t.revisesThought)) || pos.get(key(null, t.revisesThought));
        if (target) {
          const bend = here.x - 40;
          edges.append(svg("path", { class: "edge revises", "marker-end": "url(#arrow)", d: `M${here.x - 8},${here.y} C${bend - 30},${here.y} ${bend - 30},${target.y} ${target.x - 9},${target.y}` }));
        }
      }
    }
  }
  for (const lane of lanes) {
    for (const t of lane.thoughts) {
      const { x, y } = pos.get(key(lane.id, t.thoughtNumber));
      const classes = ["node", lane.id !== null ? "branch" : "", t.isRevision ? "revision" : "", state.fresh.has(t.id) ? "fresh" : "", state.selected === t.id ? "selected" : ""].filter(Boolean).join(" ");
      const label = t.thought.length > 28 ? t.thought.slice(0, 27) + "…" : t.thought;
      const node = svg("g", { class: classes, "data-node-id": t.id, "data-number": t.thoughtNumber, tabindex: "0" },
        svg("circle", { cx: x, cy: y, r: 9 }),
        svg("text", { x: x + 14, y: y + 4 }, `#${t.thoughtNumber} `, userSvg(label)));
      node.addEventListener("click", () => showThought(t, lane));
      g.append(node);
    }
  }
  g.setAttribute("width", LEFT + lanes.length * LANE + 40);
  g.setAttribute("height", TOP + maxRow * ROW);
}

function showThought(t, lane) {
  state.selected = t.id;
  renderGraph();
  $("detail").hidden = false;
  $("detail-title").replaceChildren(`Thought #${t.thoughtNumber}`, ...(lane.id ? [" on branch ", user(lane.id)] : []));
  $("detail-meta").textContent = [when(t.timestamp), t.isRevision ? `revises #${t.revisesThought}` : "", t.nextThoughtNeeded ? "" : "closes the session", t.id].filter(Boolean).join(" · ");
  $("detail-text").replaceChildren(user(t.thought));
  if (!t.thoughtTruncated) return;
  // Frames carry the first characters of a long thought: read it whole.
  $("detail-text").replaceChildren(user(t.thought), `… (${t.thoughtChars} characters; reading the whole text)`);
  const session = state.open;
  getJson(`/api/sessions/${encodeURIComponent(session)}/thoughts/${encodeURIComponent(t.id)}`)
    .then((whole) => {
      if (state.selected === t.id && state.open === session) $("detail-text").replaceChildren(user(whole.thought));
    })
    .catch((e) => {
      if (state.selected === t.id) $("detail-text").replaceChildren(user(t.thought), `… (the whole text could not be read: ${e.message})`);
    });
}

async function showAnalysis() {
  if (!state.open) return;
  const a = await getJson(`/api/sessions/${encodeURIComponent(state.open)}/analysis`);
  const dl = $("analysis-body");
  dl.replaceChildren();
  const rows = [];
  const walk = (prefix, v) => {
    if (v && typeof v === "object" && !Array.isArray(v)) for (const [k, w] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, w);
    else rows.push([prefix, Array.isArray(v) ? v.join(", ") : String(v)]);
  };
  walk("", a);
  for (const [k, v] of rows) dl.append(el("dt", {}, k), el("dd", {}, user(v)));
  $("analysis").hidden = false;
}

// ---- live ----------------------------------------------------------------

const pending = [];

function subscribe(message) {
  if (state.socket && state.socket.readyState === WebSocket.OPEN) state.socket.send(JSON.stringify(message));
  else pending.push(message);
}

// Reconnecting waits longer each time a socket did not last (up to 30 s),
// so that nothing the server refuses is asked for every second forever.
let retry = 1000;
let connected = false;

function connect() {
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  state.socket = ws;
  let opened = 0;
  ws.onopen = () => {
    // What changed while the socket was down is read again.
    if (connected) loadList().catch((e) => console.error(e));
    connected = true;
    opened = Date.now();
    $("live").textContent = "live";
    $("live").classList.remove("off");
    ws.send(JSON.stringify({ type: "subscribe", scope: "sessions" }));
    if (state.open) ws.send(JSON.stringify({ type: "subscribe", sessionId: state.open }));
    while (pending.length) {
      const m = pending.shift();
      if (!(m.sessionId && m.sessionId === state.open)) ws.send(JSON.stringify(m));
    }
  };
  ws.onclose = () => {
    $("live").textContent = "offline";
    $("live").classList.add("off");
    retry = opened && Date.now() - opened > 30000 ? 1000 : Math.min(retry * 2, 30000);
    // A browser does not say why a socket was refused: a 401 from the API
    // (the server restarted, the cookie is stale) goes to the sign-in form.
    getJson("/api/tags").catch(() => {});
    setTimeout(connect, retry);
  };
  ws.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    onFrame(frame);
  };
}

function onFrame(frame) {
  const p = frame.payload || {};
  switch (frame.type) {
    case "session_snapshot":
      if (frame.sessionId === state.open) showSnapshot(p);
      break;
    case "session_started":
      if (!state.sessions.has(p.session.id) && listed(p.session)) {
        state.sessions.set(p.session.id, p.session);
        state.order.unshift(p.session.id);
        if (state.total !== null) state.total += 1;
        renderList();
      }
      break;
    case "thought_added":
    case "thought_revised":
    case "thought_branched": {
      // A thought reopens a completed session (a session_ended follows
      // when it closes it again).
      const s = state.sessions.get(frame.sessionId);
      if (s) {
        s.thoughtCount += 1;
        if (frame.type === "thought_branched") s.branchCount += 1;
        s.updatedAt = p.thought.timestamp;
        s.status = "active";
        s.completedAt = null;
        renderList();
      }
      if (frame.sessionId === state.open && state.snapshot) {
        if (state.snapshot.session.status !== "active") {
          state.snapshot.session.status = "active";
          state.snapshot.session.completedAt = null;
          showSnapshot(state.snapshot);
        }
        addThought(p.thought);
      }
      break;
    }
    case "session_ended": {
      // The closing thought's time (its thought_added came first).
      const s = state.sessions.get(frame.sessionId);
      const at = (s && s.updatedAt) || new Date().toISOString();
      if (s) { s.status = "completed"; s.completedAt = at; renderList(); }
      if (frame.sessionId === state.open && state.snapshot) {
        state.snapshot.session.status = "completed";
        state.snapshot.session.completedAt = at;
        showSnapshot(state.snapshot);
      }
      break;
    }
    case "error":
      // A subscription to a session deleted since it was listed.
      if (frame.sessionId === undefined && state.open && /not found/i.test(p.message || "")) {
        const id = state.open;
        getJson("/api/sessions/" + encodeURIComponent(id) + "/thread").catch((e) => {
          if (e.status === 404) gone(id, e.message);
        });
      }
      break;
  }
}

// ---- start ---------------------------------------------------------------

let searchTimer = null;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(loadList, 250);
});
$("project").addEventListener("change", loadList);
$("tag").addEventListener("change", loadList);
$("show-analysis").addEventListener("click", showAnalysis);
$("more").addEventListener("click", () => loadList(true).catch((e) => console.error(e)));

loadList().then(loadTags).catch((e) => console.error(e));
connect();
const wanted = new URLSearchParams(location.search).get("session");
if (wanted) openSession(wanted);
