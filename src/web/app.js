// storm-web's page: polls /api/v1/status and /api/v1/events five times a
// second and redraws.  Every string from the data goes in through
// textContent, never as markup: job and user names are the users' own.
"use strict";
// a poll starts every POLL_MS whatever the last one took: five a second
// at least, with room for a slow answer
const POLL_MS = 150;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function hue(id) { return (id * 137) % 360; }

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
  s.textContent = "quantum " + (h.quantum_us / 1000).toFixed(3) + " ms (measured " +
    (h.period_us / 1000).toFixed(3) + " ms), slot " + (h.nslots ? h.slot : 0) + " of " + h.nslots +
    ", epoch " + h.epoch + ", " + h.quanta + " quanta, strobe " + h.strobe_us + " us, confirm " +
    h.confirm_us + " us, switch skew " +
    (st.switch_skew_us === null || st.switch_skew_us === undefined ? "-" : (st.switch_skew_us / 1000).toFixed(3) + " ms") +
    ", status " + st.age_s + " s old" + (st.stale ? " - STALE: the machine manager is not running" : "");
  s.dataset.slot = h.slot;
  s.dataset.epoch = h.epoch;
}

function drawMatrix(st) {
  const t = document.getElementById("matrix");
  const rows = [];
  const head = el("tr");
  head.appendChild(el("th", "slot"));
  for (const n of st.nodes) head.appendChild(el("th", n.name));
  rows.push(head);
  const nslots = Math.max(st.header.nslots, 1);
  for (let s = 0; s < nslots; s++) {
    const tr = el("tr");
    const running = st.header.nslots > 0 && s === st.header.slot;
    if (running) tr.className = "running";
    tr.dataset.slot = s;
    tr.appendChild(el("th", (running ? "\u25b6 " : "") + s));
    for (const n of st.nodes) {
      let owner = null, filler = null;
      for (const j of st.jobs) {
        if (!ranksHas(j.nodes, n.rank)) continue;
        if (j.slot === s) owner = j;
        else if (j.slot >= 0 && ((j.mask >>> s) & 1) && !filler) filler = j;
      }
      const j = owner || filler;
      const td = el("td", j ? j.job_id : "-", j ? (owner ? "job" : "job fill") : "");
      if (j) {
        td.style.background = "hsl(" + hue(j.job_id) + ",70%,70%)";
        td.title = "job " + j.job_id + " " + (j.name || "") + (owner ? "" : " (filling in)");
        td.dataset.job = j.job_id;
      }
      tr.appendChild(td);
    }
    rows.push(tr);
  }
  t.replaceChildren(...rows);
}

function drawNodes(st) {
  const box = document.getElementById("nodes");
  const tiles = st.nodes.map(n => {
    const d = el("div", null, "tile");
    d.dataset.node = n.name;
    d.dataset.state = n.view;
    d.appendChild(el("div", n.name, "name"));
    d.appendChild(el("span", n.view, "st " + n.view));
    d.appendChild(el("div", "ack " + (n.ack_us / 1000).toFixed(3) + " ms, misses " + n.misses));
    d.appendChild(el("div", "switch lag " + (n.switch_lag_us === null || n.switch_lag_us === undefined ?
      "-" : (n.switch_lag_us / 1000).toFixed(3) + " ms"), "lag"));
    const r = n.rejected || {ctl: 0, bcast: 0, fabric: 0};
    d.appendChild(el("div", "thaws " + (n.failsafe_events || 0) + ", refused " + r.ctl + "/" + r.bcast + "/" + r.fabric));
    return d;
  });
  box.replaceChildren(...tiles);
}

function drawJobs(st) {
  const body = document.querySelector("#jobs tbody");
  const rows = st.jobs.map(j => {
    const tr = el("tr");
    tr.dataset.job = j.job_id;
    const id = el("td", j.job_id);
    id.style.background = "hsl(" + hue(j.job_id) + ",70%,70%)";
    tr.appendChild(id);
    tr.appendChild(el("td", j.name || "", "name"));
    tr.appendChild(el("td", j.user || "", "user"));
    tr.appendChild(el("td", j.slot < 0 ? "none" : j.slot));
    tr.appendChild(el("td", j.policy || ""));
    tr.appendChild(el("td", j.nodes));
    tr.appendChild(el("td", j.mask === 0xffffffff ? "all" : "0x" + j.mask.toString(16)));
    // measured on the nodes (their cgroups), not derived from the slots
    const share = el("td", j.cpu_share === null || j.cpu_share === undefined ? "-" :
      j.cpu_share.toFixed(1) + "% of " + j.cpus + " CPU" + (j.cpus === 1 ? "" : "s"), "share");
    share.dataset.share = j.cpu_share === null || j.cpu_share === undefined ? "" : j.cpu_share;
    tr.appendChild(share);
    return tr;
  });
  body.replaceChildren(...rows);
}

function rankNames(st, list) {
  if (!list) return [];
  return st.nodes.filter(n => ranksHas(list, n.rank)).map(n => n.name);
}

function drawBcasts(st) {
  const body = document.querySelector("#bcasts tbody");
  const rows = (st.bcasts || []).map(b => {
    const tr = el("tr", null, b.in_flight ? "inflight" : b.phase);
    tr.dataset.relay = b.name;
    tr.dataset.phase = b.phase;
    tr.dataset.job = b.job_id;
    const pct = b.size ? Math.floor(100 * b.received / b.size) : 100;
    const ready = rankNames(st, b.ready), done = rankNames(st, b.done);
    tr.appendChild(el("td", b.name));
    tr.appendChild(el("td", b.job_id));
    tr.appendChild(el("td", b.phase, "phase"));
    const prog = el("td", null, "progress");
    const bar = el("progress");
    bar.max = 100;
    bar.value = pct;
    prog.appendChild(bar);
    prog.appendChild(el("span", " " + pct + "% of " + (b.size / 1048576).toFixed(1) + " MiB"));
    tr.appendChild(prog);
    tr.appendChild(el("td", ready.length + "/" + b.nnodes + (ready.length ? " " + ready.join(",") : ""), "ready"));
    tr.appendChild(el("td", done.length + "/" + b.nnodes + (done.length ? " " + done.join(",") : ""), "done"));
    tr.appendChild(el("td", (b.elapsed_us / 1000).toFixed(1) + " ms"));
    // a rate only for a finished broadcast: in flight, size over the time
    // so far would be a guess
    tr.appendChild(el("td", !b.in_flight && b.elapsed_us ? (b.size / b.elapsed_us).toFixed(1) + " MB/s" : "-"));
    tr.appendChild(el("td", b.count + " (" + b.failed + ")"));
    return tr;
  });
  body.replaceChildren(...rows);
}

function drawEvents(evs) {
  const ol = document.getElementById("events");
  const items = evs.slice().reverse().slice(0, 100).map(e => {
    const li = el("li", new Date(e.time * 1000).toLocaleTimeString() + " " + e.kind + ": " + e.text);
    li.dataset.kind = e.kind;
    return li;
  });
  ol.replaceChildren(...items);
}

function showError(msg) {
  const e = document.getElementById("error");
  e.hidden = !msg;
  e.textContent = msg || "";
}

let polls = 0;
let drawn = "";
async function poll() {
  const started = performance.now();
  try {
    const r = await fetch("/api/v1/status", {cache: "no-store"});
    const st = await r.json();
    if (!r.ok) {
      showError(st.error || ("HTTP " + r.status));
    } else {
      // the status changes about once a second: redraw only then (or when
      // its age or the error changes), not at every poll
      const key = st.seq + "/" + st.age_s + "/" + st.error;
      if (key !== drawn) {
        drawn = key;
        showError(st.error ? "last read failed: " + st.error : "");
        drawSummary(st);
        drawMatrix(st);
        drawNodes(st);
        drawJobs(st);
        drawBcasts(st);
      }
    }
    if (polls++ % 5 === 0) {
      const e = await fetch("/api/v1/events", {cache: "no-store"});
      if (e.ok) drawEvents((await e.json()).events);
    }
    document.body.dataset.polls = polls;
  } catch (err) {
    showError("storm-web does not answer: " + err);
  }
  setTimeout(poll, Math.max(0, POLL_MS - (performance.now() - started)));
}
poll();
