/* SPDX-License-Identifier: GPL-2.0-or-later */
// storm-web's page: five updates a second from /api/v1/stream, each
// redrawing in place only what changed.  Every string from the data goes in
// through textContent, never as markup: job and user names are the users'
// own.
"use strict";

function el(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

// Writes only what differs: the page is redrawn in place, and an
// unchanged property written again would still cost the browser a style
// and layout pass.
function setText(e, v) {
  const s = v === undefined || v === null ? "" : String(v);
  if (e.textContent !== s) e.textContent = s;
}
function setClass(e, c) { if (e.className !== c) e.className = c; }
function setData(e, k, v) {
  if (v === undefined || v === null) {
    if (k in e.dataset) delete e.dataset[k];
  } else if (e.dataset[k] !== String(v)) {
    e.dataset[k] = v;
  }
}
// the style reads back normalized (rgb), so the value set is kept beside it
function setBackground(e, v) {
  if (e.stormBackground !== v) { e.style.background = v; e.stormBackground = v; }
}
function setTitle(e, v) { if (e.title !== v) e.title = v; }

// n children of parent, made by make() when missing, the extra ones removed
function kids(parent, n, make) {
  while (parent.children.length > n) parent.lastElementChild.remove();
  while (parent.children.length < n) parent.appendChild(make());
  return parent.children;
}
function cells(tr, n, tag) { return kids(tr, n, () => el(tag)); }

function hue(id) { return (id * 137) % 360; }
function jobColour(id) { return "hsl(" + hue(id) + ", 70%, 70%)"; }

function ranksHas(list, k) {
  for (const part of list.split(",")) {
    if (!part) continue;
    const [a, b] = part.split("-").map(Number);
    if (k >= a && k <= (isNaN(b) ? a : b)) return true;
  }
  return false;
}

function drawSummary(st) {
  const h = st.header;
  const s = document.getElementById("summary");
  setText(s, "quantum " + (h.quantum_us / 1000).toFixed(3) + " ms (measured " +
    (h.period_us / 1000).toFixed(3) + " ms), " + h.nslots + " slot" + (h.nslots === 1 ? "" : "s") +
    ", epoch " + h.epoch + ", " + h.quanta + " quanta, strobe " + h.strobe_us + " us, confirm " +
    h.confirm_us + " us, switch skew " +
    (st.switch_skew_us === null || st.switch_skew_us === undefined ? "-" : (st.switch_skew_us / 1000).toFixed(3) + " ms") +
    (st.stale ? " - STALE: the machine manager is not running" : ""));
  setData(s, "slot", h.slot);
  setData(s, "epoch", h.epoch);
}

function drawMatrix(st) {
  const t = document.getElementById("matrix");
  const nslots = Math.max(st.header.nslots, 1);
  const rows = kids(t, nslots + 1, () => el("tr"));
  const head = cells(rows[0], st.nodes.length + 1, "th");
  setText(head[0], "slot");
  st.nodes.forEach((n, i) => setText(head[i + 1], n.name));
  for (let s = 0; s < nslots; s++) {
    const tr = rows[s + 1];
    setData(tr, "slot", s);
    const row = kids(tr, st.nodes.length + 1, () => el("td"));
    if (row[0].tagName !== "TH") tr.replaceChild(el("th"), row[0]);
    setText(row[0], s);
    st.nodes.forEach((n, i) => {
      let owner = null, filler = null;
      for (const j of st.jobs) {
        if (!ranksHas(j.nodes, n.rank)) continue;
        if (j.slot === s) owner = j;
        else if (j.slot >= 0 && ((j.mask >>> s) & 1) && !filler) filler = j;
      }
      const j = owner || filler;
      const td = row[i + 1];
      setText(td, j ? j.job_id : "-");
      setClass(td, j ? (owner ? "job" : "job fill") : "");
      setBackground(td, j ? jobColour(j.job_id) : "");
      setTitle(td, j ? "job " + j.job_id + " " + (j.name || "") + (owner ? "" : " (filling in)") : "");
      setData(td, "job", j ? j.job_id : null);
    });
  }
  placeMarker();
  drawRunning();
}

// The running slot: sampled five times a second from the Machine
// Manager's last strobe (each tick's "now") while they come and agree with
// the matrix, else the slot of the last status.  It is one box over the
// matrix in a layer of its own, moved by a transform: a move is composited,
// never laid out or painted again.  Its geometry is read when the matrix
// is drawn (once per status).
let lastStatus = null, lastNow = null, lastNowAt = 0, rowTops = [];
const NOW_FRESH_MS = 1000;
function placeMarker() {
  const t = document.getElementById("matrix"), m = document.getElementById("marker");
  rowTops = [];
  // a row's offsetTop is from the table, the table's from #matrix-wrap
  for (let s = 1; s < t.rows.length; s++) rowTops.push(t.offsetTop + t.rows[s].offsetTop);
  if (t.rows.length > 1) {
    const h = t.rows[1].offsetHeight + "px", w = t.offsetLeft + t.offsetWidth + "px";
    if (m.style.height !== h) m.style.height = h;
    if (m.style.width !== w) m.style.width = w;
  }
}
function drawRunning() {
  const st = lastStatus;
  if (!st) return;
  const nslots = st.header.nslots;
  const fresh = lastNow && performance.now() - lastNowAt < NOW_FRESH_MS && lastNow.nslots === Math.max(nslots, 1);
  const slot = nslots > 0 ? (fresh ? lastNow.slot : st.header.slot) : null;
  const m = document.getElementById("marker"), e = document.getElementById("now");
  const show = slot !== null && slot < rowTops.length;
  if (m.hidden !== !show) m.hidden = !show;
  const tf = show ? "translateY(" + rowTops[slot] + "px)" : "";
  if (show && m.stormTransform !== tf) { m.style.transform = tf; m.stormTransform = tf; }
  setData(m, "slot", show ? slot : null);
  setText(e, show ? "running slot " + slot + (fresh ? "" : " (at the last status)") : "");
  setData(e, "slot", show ? slot : null);
  setData(e, "quantum", fresh ? lastNow.quantum : null);
  setData(e, "sampled", show ? (fresh ? "strobe" : "status") : null);
}

function makeTile() {
  const d = el("div", "tile");
  d.appendChild(el("div", "name"));
  d.appendChild(el("span"));
  d.appendChild(el("div"));
  d.appendChild(el("div", "lag"));
  d.appendChild(el("div"));
  return d;
}

function drawNodes(st) {
  const tiles = kids(document.getElementById("nodes"), st.nodes.length, makeTile);
  st.nodes.forEach((n, i) => {
    const d = tiles[i], [name, state, ack, lag, counts] = d.children;
    setData(d, "node", n.name);
    setData(d, "state", n.view);
    setText(name, n.name);
    setText(state, n.view);
    setClass(state, "st " + n.view);
    setText(ack, "ack " + (n.ack_us / 1000).toFixed(3) + " ms, misses " + n.misses);
    setText(lag, "switch lag " + (n.switch_lag_us === null || n.switch_lag_us === undefined ?
      "-" : (n.switch_lag_us / 1000).toFixed(3) + " ms"));
    const r = n.rejected || {ctl: 0, bcast: 0, fabric: 0};
    setText(counts, "thaws " + (n.failsafe_events || 0) + ", refused " + r.ctl + "/" + r.bcast + "/" + r.fabric);
  });
}

function drawJobs(st) {
  const rows = kids(document.querySelector("#jobs tbody"), st.jobs.length, () => el("tr"));
  st.jobs.forEach((j, i) => {
    const tr = rows[i];
    setData(tr, "job", j.job_id);
    const td = cells(tr, 8, "td");
    setText(td[0], j.job_id);
    setBackground(td[0], jobColour(j.job_id));
    setText(td[1], j.name || "");
    setClass(td[1], "name");
    setText(td[2], j.user || "");
    setClass(td[2], "user");
    setText(td[3], j.slot < 0 ? "none" : j.slot);
    setText(td[4], j.policy || "");
    setText(td[5], j.nodes);
    setText(td[6], j.mask === 0xffffffff ? "all" : "0x" + j.mask.toString(16));
    // measured on the nodes (their cgroups), not derived from the slots
    const none = j.cpu_share === null || j.cpu_share === undefined;
    setText(td[7], none ? "-" : j.cpu_share.toFixed(1) + "% of " + j.cpus + " CPU" + (j.cpus === 1 ? "" : "s"));
    setClass(td[7], "share");
    setData(td[7], "share", none ? "" : j.cpu_share);
  });
}

function rankNames(st, list) {
  if (!list) return [];
  return st.nodes.filter(n => ranksHas(list, n.rank)).map(n => n.name);
}

function drawBcasts(st) {
  const bcasts = st.bcasts || [];
  const rows = kids(document.querySelector("#bcasts tbody"), bcasts.length, () => el("tr"));
  bcasts.forEach((b, i) => {
    const tr = rows[i];
    setClass(tr, b.in_flight ? "inflight" : b.phase);
    setData(tr, "relay", b.name);
    setData(tr, "phase", b.phase);
    setData(tr, "job", b.job_id);
    const pct = b.size ? Math.floor(100 * b.received / b.size) : 100;
    const ready = rankNames(st, b.ready), done = rankNames(st, b.done);
    const td = cells(tr, 9, "td");
    setText(td[0], b.name);
    setText(td[1], b.job_id);
    setText(td[2], b.phase);
    setClass(td[2], "phase");
    setClass(td[3], "progress");
    const [bar, label] = kids(td[3], 2, () => el(td[3].children.length ? "span" : "progress"));
    bar.max = 100;
    if (bar.value !== pct) bar.value = pct;
    setText(label, " " + pct + "% of " + (b.size / 1048576).toFixed(1) + " MiB");
    setText(td[4], ready.length + "/" + b.nnodes + (ready.length ? " " + ready.join(",") : ""));
    setClass(td[4], "ready");
    setText(td[5], done.length + "/" + b.nnodes + (done.length ? " " + done.join(",") : ""));
    setClass(td[5], "done");
    setText(td[6], (b.elapsed_us / 1000).toFixed(1) + " ms");
    // a rate only for a finished broadcast: in flight, size over the time
    // so far would be a guess
    setText(td[7], !b.in_flight && b.elapsed_us ? (b.size / b.elapsed_us).toFixed(1) + " MB/s" : "-");
    setText(td[8], b.count + " (" + b.failed + ")");
  });
}

function drawEvents(evs) {
  const shown = evs.slice().reverse().slice(0, 100);
  const items = kids(document.getElementById("events"), shown.length, () => el("li"));
  shown.forEach((e, i) => {
    setText(items[i], new Date(e.time * 1000).toLocaleTimeString() + " " + e.kind + ": " + e.text);
    setData(items[i], "kind", e.kind);
  });
}

function showError(msg) {
  const e = document.getElementById("error");
  if (e.hidden !== !msg) e.hidden = !msg;
  setText(e, msg || "");
}

function drawStatus(st) {
  lastStatus = st;
  showError(st.error ? "last read failed: " + st.error : "");
  drawSummary(st);
  drawMatrix(st);
  drawNodes(st);
  drawJobs(st);
  drawBcasts(st);
}

// How old the status is, at every update, in whole seconds: the text (and
// so the page) changes once a second, with the status.  Every change the
// browser draws costs it a frame; a tick that changes nothing costs none.
function drawAge(age) {
  setText(document.getElementById("age"), age === null || age === undefined ? "" :
    "status " + Math.floor(age) + " s old");
}

// One stream from storm-web (/api/v1/stream), five updates a second: the
// new status when the Machine Manager wrote one, the event log when it
// grew, and every time a tick: the status' age and the running slot at that
// instant.  Each is drawn in place, writing only what differs, so
// the page is redrawn only when the data changed.  The browser reconnects
// by itself when the stream breaks.
let updates = 0;
function counted(f) {
  return e => {
    try {
      f(JSON.parse(e.data));
    } catch (err) {
      showError("bad update from storm-web: " + err);
    }
    document.body.dataset.updates = ++updates;
  };
}

const stream = new EventSource("/api/v1/stream");
stream.addEventListener("status", counted(st => { drawStatus(st); drawAge(st.age); }));
stream.addEventListener("tick", counted(t => {
  drawAge(t.age);
  if (t.now) {
    lastNow = t.now;
    lastNowAt = performance.now();
  }
  drawRunning();
}));
stream.addEventListener("events", counted(e => drawEvents(e.events)));
stream.addEventListener("unavailable", counted(e => showError(e.error)));
stream.addEventListener("error", () => {
  if (stream.readyState !== EventSource.OPEN) showError("storm-web does not answer; reconnecting");
});
