// The edgerollout dashboard's page: draws what the server sends and decides nothing itself.
// The server's documents are described in edgerollout/cli/dashboard/documents.py.
"use strict";

const TOKEN = document.querySelector('meta[name="edgerollout-token"]').content;
const q = (selector) => document.querySelector(selector);

// Each cell state: a colour (Okabe-Ito, told apart with most colour vision deficiencies), a
// letter drawn in large cells, and a mark drawn in small ones, so no state is told by colour
// alone. The order is the server's (documents.STATES).
const STYLE = {
  updated: { colour: "#009e73", letter: "U", mark: "solid", text: "updated" },
  upgrading: { colour: "#56b4e9", letter: "G", mark: "half", text: "upgrading" },
  pulling: { colour: "#0072b2", letter: "P", mark: "dot", text: "pulling its image" },
  outdated: { colour: "#bbbbbb", letter: "O", mark: "hollow", text: "outdated" },
  held: { colour: "#e69f00", letter: "H", mark: "bar", text: "held" },
  waiting: { colour: "#f0e442", letter: "W", mark: "ring", text: "waiting: node offline" },
  broken: { colour: "#d55e00", letter: "B", mark: "cross", text: "broken" },
};
const CURVE = [
  ["updated", "#009e73"],
  ["upgrading", "#56b4e9"],
  ["waiting", "#b8a800"],
  ["broken", "#d55e00"],
];
const PLAN_EVERY_MS = 5000;
// A table of thousands of rows would slow the page for what no one reads; the plan command has them.
const PLAN_ROWS = 200;
const CURVE_POINTS = 2000; // the curve keeps this many readings, the oldest dropped

let stream = null;
// When the last document arrived (ms since the page opened), how long it took to parse and draw.
// `documents` counts the documents received, `slowestMs` the longest parse and draw of one.
const timing = { receivedAt: null, parsedMs: null, drawnMs: null, documents: 0, slowestMs: 0 };
let current = null; // the rollout's page: {key, doc, layout, curve, selected, lastPlan}

function api(path) {
  return `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(TOKEN)}`;
}

function banner(message) {
  const box = q("#banner");
  box.textContent = message || "";
  box.hidden = !message;
}

function text(element, value) {
  element.textContent = value == null ? "" : String(value);
}

function cell(row, value) {
  const td = document.createElement("td");
  text(td, value);
  row.appendChild(td);
  return td;
}

function open(path, handlers) {
  if (stream) stream.close();
  stream = new EventSource(api(path));
  stream.addEventListener("connection", (event) => {
    const connection = JSON.parse(event.data);
    banner(connection.ok ? "" : `The API server cannot be read: ${connection.message}`);
  });
  for (const [name, handler] of Object.entries(handlers)) {
    stream.addEventListener(name, (event) => {
      timing.receivedAt = performance.now();
      const document = JSON.parse(event.data);
      timing.parsedMs = performance.now() - timing.receivedAt;
      handler(document);
    });
  }
  stream.onerror = () => {
    // EventSource tries again by itself, unless the server refused it (a restarted dashboard
    // has a new token, so its new URL must be opened).
    banner(stream.readyState === EventSource.CLOSED
      ? "The dashboard's server refused this page: open the URL the command printed."
      : "The connection to the dashboard's server is lost; reconnecting…");
  };
  stream.onopen = () => banner("");
}

// --- home -------------------------------------------------------------------------------

function showHome() {
  current = null;
  q("#home").hidden = false;
  q("#rollout").hidden = true;
  text(q("#where"), "");
  open("/api/home/stream", { home: drawHome });
}

function counted(value) {
  return value == null ? "-" : value;
}

// A DaemonSet's nodes as one bar: updated, held, offline, broken and the rest, in the cells'
// colours, its words in its label (the row's cells say the numbers too).
function progressBar(item) {
  const bar = document.createElement("span");
  bar.className = "progress";
  const remaining = item.total - item.updated - item.held - item.offline - item.broken;
  const parts = [
    ["updated", item.updated],
    ["held", item.held],
    ["waiting", item.offline],
    ["broken", item.broken],
    ["outdated", remaining],
  ];
  for (const [state, count] of parts) {
    if (count <= 0) continue;
    const part = document.createElement("span");
    part.style.width = `${(100 * count) / item.total}%`;
    part.style.backgroundColor = STYLE[state].colour;
    bar.appendChild(part);
  }
  bar.setAttribute("role", "img");
  bar.setAttribute("aria-label", `${item.updated} updated, ${item.held} held, ${item.offline} offline, ${item.broken} broken of ${item.total}`);
  return bar;
}

function drawHome(doc) {
  const body = q("#rollouts tbody");
  body.replaceChildren();
  q("#home-empty").hidden = doc.items.length > 0;
  for (const item of doc.items) {
    const row = document.createElement("tr");
    row.dataset.key = `${item.namespace}/${item.name}`;
    cell(row, item.namespace);
    const link = document.createElement("a");
    link.href = `#/rollouts/${encodeURIComponent(item.namespace)}/${encodeURIComponent(item.name)}`;
    text(link, item.name);
    cell(row, "").appendChild(link);
    cell(row, item.strategy || "<none>");
    const updated = cell(row, item.total == null ? "-" : `${item.updated}/${item.total}`);
    if (item.total) updated.appendChild(progressBar(item));
    cell(row, counted(item.offline));
    cell(row, counted(item.broken));
    cell(row, counted(item.held));
    cell(row, item.wave ? `${item.wave.name} (${item.wave.index + 1} of ${item.wave.count})` : "<none>");
    cell(row, item.state.text);
    body.appendChild(row);
  }
}

// --- one rollout --------------------------------------------------------------------------

function showRollout(namespace, name) {
  const key = `${namespace}/${name}`;
  current = { key, namespace, name, doc: null, layout: null, curve: [], selected: null, lastPlan: 0 };
  q("#home").hidden = true;
  q("#rollout").hidden = false;
  q("#rollout").classList.remove("gone");
  text(q("#where"), key);
  text(q("#rollout-name"), key);
  for (const id of ["#rollout-summary", "#rollout-strategy", "#rollout-staging", "#action-message", "#plan-summary"]) {
    text(q(id), "");
  }
  q("#plan tbody").replaceChildren();
  q("#events tbody").replaceChildren();
  q("#curve").replaceChildren();
  const base = `/api/rollouts/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
  current.base = base;
  open(`${base}/stream`, {
    rollout: (doc) => drawRollout(doc),
    gone: (gone) => {
      q("#rollout").classList.add("gone");
      text(q("#rollout-summary"), gone.message);
    },
  });
  readEvents();
}

function drawRollout(doc) {
  const started = performance.now();
  current.doc = doc;
  q("#rollout").classList.remove("gone");
  text(q("#rollout-summary"), doc.summary);
  text(q("#rollout-strategy"), `Strategy: ${doc.strategy}`);
  text(q("#rollout-staging"), doc.staging ? `Staging: ${doc.staging}` : "");
  text(q("#pool-label"), `grouped by ${doc.poolLabel}`);
  drawLegend(doc);
  drawGrid(doc);
  recordCurve(doc);
  if (current.selected) describe(current.selected);
  const now = Date.now();
  if (now - current.lastPlan > PLAN_EVERY_MS) readPlan();
  timing.drawnMs = performance.now() - started;
  timing.documents += 1;
  timing.slowestMs = Math.max(timing.slowestMs, timing.parsedMs + timing.drawnMs);
}

function drawLegend(doc) {
  const legend = q("#legend");
  legend.replaceChildren();
  for (const state of doc.states) {
    const item = document.createElement("li");
    item.dataset.state = state;
    const swatch = document.createElement("canvas");
    swatch.width = swatch.height = 16;
    paint(swatch.getContext("2d"), state, 0, 0, 16);
    item.appendChild(swatch);
    const label = document.createElement("span");
    text(label, `${STYLE[state].text} (${STYLE[state].letter}): ${doc.counts[state]}`);
    item.appendChild(label);
    legend.appendChild(item);
  }
}

// A cell of `size` pixels at (x, y): its colour, and its letter or mark.
function paint(context, state, x, y, size) {
  const style = STYLE[state];
  const c = context;
  c.fillStyle = style.colour;
  if (style.mark === "hollow") {
    c.fillStyle = "#ffffff";
  }
  c.fillRect(x, y, size, size);
  c.strokeStyle = "#1b1b1b";
  c.fillStyle = "#1b1b1b";
  c.lineWidth = Math.max(1, size / 8);
  if (size >= 14) {
    c.font = `${Math.floor(size * 0.7)}px system-ui, sans-serif`;
    c.textAlign = "center";
    c.textBaseline = "middle";
    c.fillText(style.letter, x + size / 2, y + size / 2 + 1);
    if (style.mark === "hollow") c.strokeRect(x + 0.5, y + 0.5, size - 1, size - 1);
    return;
  }
  const m = size / 2;
  switch (style.mark) {
    case "half":
      c.beginPath(); c.moveTo(x, y + size); c.lineTo(x + size, y); c.lineTo(x + size, y + size); c.fill();
      break;
    case "dot":
      c.fillStyle = "#ffffff"; c.fillRect(x + m - size / 6, y + m - size / 6, size / 3, size / 3);
      break;
    case "hollow":
      c.strokeRect(x + 0.5, y + 0.5, size - 1, size - 1);
      break;
    case "bar":
      c.fillRect(x, y + m - size / 8, size, size / 4);
      break;
    case "ring":
      c.fillStyle = "#1b1b1b"; c.fillRect(x + m - size / 6, y + m - size / 6, size / 3, size / 3);
      break;
    case "cross":
      c.beginPath(); c.moveTo(x, y); c.lineTo(x + size, y + size); c.moveTo(x + size, y); c.lineTo(x, y + size); c.stroke();
      break;
    default:
      break;
  }
}

const LABEL_HEIGHT = 20;

// Where each pool and cell goes: a label line per pool, then its cells row by row.
function layoutOf(doc, width) {
  const total = doc.pools.reduce((sum, pool) => sum + pool.cells.length, 0);
  const size = total > 2000 ? 8 : total > 300 ? 12 : 18;
  const step = size + 2;
  const columns = Math.max(1, Math.floor(width / step));
  const blocks = [];
  let y = 0;
  for (const pool of doc.pools) {
    const rows = Math.ceil(pool.cells.length / columns);
    blocks.push({ pool, top: y, cellsTop: y + LABEL_HEIGHT, rows });
    y += LABEL_HEIGHT + rows * step + 6;
  }
  return { size, step, columns, blocks, height: y, width };
}

function drawGrid(doc) {
  const canvas = q("#grid");
  const width = Math.max(200, q("#grid-box").clientWidth - 12);
  const layout = layoutOf(doc, width);
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.floor(width * ratio);
  canvas.height = Math.floor(layout.height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${layout.height}px`;
  const c = canvas.getContext("2d");
  c.setTransform(ratio, 0, 0, ratio, 0, 0);
  c.clearRect(0, 0, width, layout.height);
  for (const block of layout.blocks) {
    const pool = block.pool;
    c.fillStyle = "#1b1b1b";
    c.font = "13px system-ui, sans-serif";
    c.textAlign = "left";
    c.textBaseline = "alphabetic";
    const counts = doc.states.filter((s) => pool.counts[s] > 0).map((s) => `${pool.counts[s]} ${s}`).join(", ");
    c.fillText(`${pool.name || "(no pool)"} — ${pool.cells.length} nodes: ${counts}`, 0, block.top + 14);
    pool.cells.forEach((node, index) => {
      const x = (index % layout.columns) * layout.step;
      const y = block.cellsTop + Math.floor(index / layout.columns) * layout.step;
      paint(c, doc.states[node[1]], x, y, layout.size);
    });
  }
  outlineSelected(c, layout);
  canvas.setAttribute("aria-label", `${doc.key}: ${doc.states.map((s) => `${doc.counts[s]} ${s}`).join(", ")}`);
  current.layout = layout;
}

// The selected cell (kept by node and pod across documents) framed, so the keyboard's moves show.
function outlineSelected(c, layout) {
  const selected = current.selected;
  if (!selected) return;
  for (const block of layout.blocks) {
    if (block.pool.name !== selected.pool) continue;
    const index = block.pool.cells.findIndex((cell) => cell[0] === selected.node[0] && cell[2] === selected.node[2]);
    if (index < 0) return;
    const x = (index % layout.columns) * layout.step;
    const y = block.cellsTop + Math.floor(index / layout.columns) * layout.step;
    c.strokeStyle = "#000000";
    c.lineWidth = 2;
    c.strokeRect(x - 1, y - 1, layout.size + 2, layout.size + 2);
  }
}

// Arrow keys move the selection through the cells, pool after pool, as they are drawn.
function moveSelection(event) {
  const layout = current && current.layout;
  if (!layout) return;
  const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: layout.columns, ArrowUp: -layout.columns };
  if (!(event.key in moves)) return;
  event.preventDefault();
  const flat = layout.blocks.flatMap((block) => block.pool.cells.map((node) => ({ pool: block.pool.name, node })));
  const selected = current.selected;
  const at = selected ? flat.findIndex((cell) => cell.pool === selected.pool && cell.node[0] === selected.node[0] && cell.node[2] === selected.node[2]) : -1;
  const next = flat[Math.min(flat.length - 1, Math.max(0, at < 0 ? 0 : at + moves[event.key]))];
  if (!next) return;
  current.selected = next;
  drawGrid(current.doc);
  describe(next);
}

function cellAt(x, y) {
  const layout = current && current.layout;
  if (!layout) return null;
  const column = Math.floor(x / layout.step);
  if (column >= layout.columns || x % layout.step > layout.size) return null;
  for (const block of layout.blocks) {
    const top = y - block.cellsTop;
    if (top < 0 || top >= block.rows * layout.step) continue;
    if (top % layout.step > layout.size) return null;
    const index = Math.floor(top / layout.step) * layout.columns + column;
    const node = block.pool.cells[index];
    return node ? { pool: block.pool.name, node } : null;
  }
  return null;
}

// The selected cell as it stands in the newest document (it may have changed since selected).
function describe(found) {
  const doc = current.doc;
  const [node, , pod] = found.node;
  const pool = doc.pools.find((p) => p.name === found.pool);
  const latest = (pool && pool.cells.find((c) => c[0] === node && c[2] === pod)) || found.node;
  const [, state, , revision, isCurrent, readiness, detail, since] = latest;
  text(q("#detail"), [
    `node      ${node || "<none>"}   (pool ${found.pool || "(no pool)"}, ${readiness || "unknown"})`,
    `pod       ${pod || "<none>"}`,
    `revision  ${revision ? `${revision} (${isCurrent ? "current" : "old"})` : "<none>"}`,
    `state     ${doc.states[state]}${detail === doc.states[state] ? "" : ` (${detail})`}`,
    `since     ${since || "before this dashboard started"}`,
  ].join("\n"));
}

function recordCurve(doc) {
  current.curve.push({ at: Date.now(), counts: doc.counts });
  if (current.curve.length > CURVE_POINTS) current.curve.shift();
  const svg = q("#curve");
  // One reading is drawn as a level line across the chart, until the next comes.
  const points = current.curve.length > 1 ? current.curve : [current.curve[0], { ...current.curve[0], at: current.curve[0].at + 1 }];
  const total = Math.max(1, ...points.map((p) => Object.values(p.counts).reduce((a, b) => a + b, 0)));
  const first = points[0].at;
  const span = Math.max(1, points[points.length - 1].at - first);
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  for (const [state, colour] of CURVE) {
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", colour);
    line.setAttribute("stroke-width", "2");
    if (state === "waiting") line.setAttribute("stroke-dasharray", "6 3");
    if (state === "broken") line.setAttribute("stroke-dasharray", "2 2");
    line.setAttribute("points", points.map((p) => `${(5 + (590 * (p.at - first)) / span).toFixed(1)},${(155 - (150 * p.counts[state]) / total).toFixed(1)}`).join(" "));
    svg.appendChild(line);
  }
  for (const [y, label] of [[14, `${total} nodes`], [152, "0"]]) {
    const mark = document.createElementNS(ns, "text");
    mark.setAttribute("x", "8");
    mark.setAttribute("y", String(y));
    mark.setAttribute("font-size", "11");
    mark.textContent = label;
    svg.appendChild(mark);
  }
  const legend = q("#curve-legend");
  legend.replaceChildren();
  const latest = points[points.length - 1].counts;
  for (const [state, colour] of CURVE) {
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = "swatch-line";
    swatch.style.borderTopStyle = state === "waiting" ? "dashed" : state === "broken" ? "dotted" : "solid";
    swatch.style.borderTopColor = colour;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(`${state}: ${latest[state]}`));
    legend.appendChild(item);
  }
}

async function readPlan() {
  current.lastPlan = Date.now();
  const response = await fetch(api(`${current.base}/plan`));
  const body = await response.json();
  if (!response.ok) {
    text(q("#plan-summary"), body.message);
    return;
  }
  const tbody = q("#plan tbody");
  tbody.replaceChildren();
  const listed = body.nodes.filter((node) => node.action !== "updated");
  for (const node of listed.slice(0, PLAN_ROWS)) {
    const row = document.createElement("tr");
    for (const value of [node.node, node.nodeReady, node.action, node.why]) cell(row, value);
    tbody.appendChild(row);
  }
  const updated = body.nodes.length - listed.length;
  const more = listed.length > PLAN_ROWS ? ` The first ${PLAN_ROWS} of ${listed.length} other nodes are listed (\`edgerollout plan\` lists all).` : "";
  const deletions = body.nodes.filter((n) => n.action === "delete now").length;
  text(q("#plan-summary"), `${deletions} to delete now; ${updated} updated nodes not listed.${more}` +
    (body.pausesRollout ? " The rollout would be paused: more nodes are broken than max-failed allows." : ""));
}

async function readEvents() {
  const response = await fetch(api(`${current.base}/events`));
  const body = await response.json();
  const tbody = q("#events tbody");
  tbody.replaceChildren();
  if (!response.ok) {
    const row = document.createElement("tr");
    cell(row, body.message).colSpan = 5;
    tbody.appendChild(row);
    return;
  }
  for (const event of body.events) {
    const row = document.createElement("tr");
    for (const value of [event.last, event.type, event.reason, event.count, event.message]) cell(row, value);
    tbody.appendChild(row);
  }
}

async function change(verb) {
  const message = q("#action-message");
  message.classList.remove("refused");
  text(message, `${verb}…`);
  let body = { message: "no answer" };
  let ok = false;
  try {
    const response = await fetch(`${current.base}/${verb}`, {
      method: "POST",
      headers: { "X-Edgerollout-Token": TOKEN },
    });
    ok = response.ok;
    body = await response.json();
  } catch (error) {
    body = { message: `the dashboard's server cannot be reached: ${error}` };
  }
  text(message, body.message);
  message.classList.toggle("refused", !ok);
  readEvents();
}

// --- wiring -------------------------------------------------------------------------------

function route() {
  const match = location.hash.match(/^#\/rollouts\/([^/]+)\/([^/]+)$/);
  if (match) showRollout(decodeURIComponent(match[1]), decodeURIComponent(match[2]));
  else showHome();
}

function select(event) {
  const box = q("#grid").getBoundingClientRect();
  const found = cellAt(event.clientX - box.left, event.clientY - box.top);
  if (found) {
    if (event.type === "click") {
      current.selected = found;
      drawGrid(current.doc);
    }
    describe(found);
  }
}

window.addEventListener("hashchange", route);
window.addEventListener("resize", () => {
  if (current && current.doc) drawGrid(current.doc);
});
window.addEventListener("DOMContentLoaded", () => {
  q("#grid").addEventListener("mousemove", select);
  q("#grid").addEventListener("click", select);
  q("#grid").addEventListener("keydown", moveSelection);
  q("#pause").addEventListener("click", () => change("pause"));
  q("#resume").addEventListener("click", () => change("resume"));
  q("#plan-refresh").addEventListener("click", () => readPlan());
  q("#events-refresh").addEventListener("click", () => readEvents());
  route();
});

// What a test reads of the page: the state each cell was drawn in, and how long drawing took.
window.edgerolloutDashboard = {
  cells() {
    const doc = current && current.doc;
    if (!doc) return null;
    const drawn = {};
    for (const pool of current.layout.blocks) {
      for (const node of pool.pool.cells) drawn[node[0]] = doc.states[node[1]];
    }
    return drawn;
  },
  timing: () => ({ ...timing }),
  describeAt: (x, y) => {
    const found = cellAt(x, y);
    if (found) describe(found);
    return q("#detail").textContent;
  },
};
