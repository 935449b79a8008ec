# SPDX-License-Identifier: GPL-2.0-or-later
"""storm-web: a real gang cluster, storm-web on its Machine Manager's
status, and Debian's headless Chromium on the page, checking what a person
would see: two gang jobs in two slots on the same nodes, the running slot
changing, a job with a hostile name shown as text, a broadcast appearing
with its progress and finishing, a node turning drained after its node
manager is killed; /metrics parsed by prometheus_client
agreeing with `stormctl show`, its strobe and confirm latency histograms
growing while the pair runs and the broadcast counted in its relay's
duration histogram; each job of the pair shown with a measured CPU share
near its fair share; bad requests answered, never a crash.

A failing test leaves the browser's screenshot and the page's HTML in the
cluster's log directory (web-failure-TEST.png/.html); the first test keeps
a screenshot of the live page there as web-page.png either way, and one
with the broadcast in flight as web-page-bcast.png."""
import contextlib
import json
import os
import re
import signal
import socket
import subprocess

import pytest

import storm_gang as g
import storm_web as w
from storm_wait import poll, wait_for

pytest.importorskip("selenium")
prom_parser = pytest.importorskip("prometheus_client.parser")

Q_MS = 40
NODES = ["node1", "node2", "node3", "node4"]
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def gangweb(make_gang_cluster):
    return make_gang_cluster("gangweb", 4,
                             "Timeslice=%dms\nMaxMPL=3\nFailSafe=500ms\n"
                             "SuspectQuanta=250\n" % Q_MS,
                             "OverSubscribe=FORCE:3")


@pytest.fixture(scope="module")
def web(gangweb):
    with w.storm_web(gangweb) as s:
        yield s


@pytest.fixture(scope="module")
def pair(gangweb):
    """The gang pair on every node, the first with a hostile name."""
    with g.running_pair(gangweb, NODES, (HOSTILE, "gangB")) as p:
        yield p


@pytest.fixture(scope="module")
def driver(web):
    with w.chromium() as d:
        yield d


@pytest.fixture
def page(request, driver, web, gangweb):
    """The page, freshly loaded; on failure its screenshot and HTML are kept."""
    driver.get(web.url)
    w.wait_page_updating(driver)
    yield driver
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        base = gangweb.path("log", "web-failure-%s" % request.node.name)
        driver.save_screenshot(base + ".png")
        with open(base + ".html", "w") as f:
            f.write(driver.page_source)


def _css(d, sel):
    return d.find_elements("css selector", sel)


# The page redraws five times a second: read it in one script, never
# element by element (an element found may be gone when it is read).
def _jobs_shown(d):
    """{job id: (name, user, slot)} as the jobs table shows them."""
    rows = d.execute_script("""
        return Array.from(document.querySelectorAll('#jobs tbody tr')).map(tr =>
            [tr.dataset.job].concat(Array.from(tr.cells).map(td => td.innerText)));""")
    return {int(r[0]): (r[2], r[3], r[4]) for r in rows}


def _matrix(d):
    """{slot: {node: job id text}} as the matrix shows it, and the running
    slot: the row the frame (#marker) is drawn over, checked against the
    slot it says it marks."""
    nodes, rows, marked, over = d.execute_script("""
        const t = document.getElementById('matrix');
        const nodes = t.rows.length ? Array.from(t.rows[0].cells).slice(1).map(c => c.innerText) : [];
        const trs = Array.from(t.querySelectorAll('tr[data-slot]'));
        const rows = trs.map(tr => [Number(tr.dataset.slot), Array.from(tr.cells).slice(1).map(c => c.innerText)]);
        const m = document.getElementById('marker');
        if (m.hidden) return [nodes, rows, null, []];
        const r = m.getBoundingClientRect();
        const over = trs.filter(tr => Math.abs(tr.getBoundingClientRect().top - r.top) < 3)
                        .map(tr => Number(tr.dataset.slot));
        return [nodes, rows, Number(m.dataset.slot), over];""")
    cells = {s: dict(zip(nodes, texts)) for s, texts in rows}
    if marked is None:
        return cells, None
    assert over == [marked], (marked, over)
    return cells, marked


def _running(d):
    """The running slot as the page shows it above the matrix: (slot, what
    it was sampled from: "strobe" or "status", quantum or None)."""
    slot, how, q = d.execute_script("""
        const e = document.getElementById('now');
        return [e.dataset.slot, e.dataset.sampled, e.dataset.quantum];""")
    return (None if slot is None else int(slot), how, None if q is None else int(q))


def _tile_state(d, node):
    return d.execute_script("""
        const t = Array.from(document.querySelectorAll('#nodes .tile')).find(e => e.dataset.node === arguments[0]);
        return t ? t.dataset.state : null;""", node)


def _events_text(d):
    return d.execute_script("""
        return Array.from(document.querySelectorAll('#events li')).map(li => li.innerText);""")


def test_page_shows_pair_slots_and_hostile_name_as_text(gangweb, web, pair, page):
    c = gangweb
    a, b, _, _ = pair
    d = page
    wait_for(lambda: set(_jobs_shown(d)) >= {a, b}, 30, "both jobs in the page's table")
    _, _, jobs = g.mm_status(c)
    shown = _jobs_shown(d)
    # the hostile name is text in its cell, and nothing made an element of it
    assert shown[a][0] == HOSTILE, shown
    assert shown[b][0] == "gangB", shown
    assert d.execute_script("return document.images.length") == 0, "a job name became markup"
    assert "&lt;img src=x" in d.page_source
    assert d.execute_script("return document.querySelectorAll('[onerror]').length") == 0
    # two slots on the same nodes, as the Machine Manager has them
    assert {shown[a][2], shown[b][2]} == {jobs[a]["slot"], jobs[b]["slot"]} == {"0", "1"}
    cells, _ = _matrix(d)
    for n in NODES:
        assert {cells[0][n], cells[1][n]} == {str(a), str(b)}, cells
        assert cells[int(jobs[a]["slot"])][n] == str(a), cells
        assert _tile_state(d, n) == "live"
    # the running slot moves at the real quantum: the page samples it from
    # the MM's last strobe (not from the status, written once a second); its
    # quantum goes past what `stormctl now` said before the page was read
    # (a sample may be a few tenths of a second old) and not past what it
    # said after
    q0 = g.mm_now(c)["quantum"]
    seen, quanta = set(), set()

    def sample():
        slot, how, q = _running(d)
        running = _matrix(d)[1]
        assert how == "strobe", how
        seen.add(running)
        quanta.add(q)
        return seen >= {0, 1} and len(quanta) > 3
    poll(sample, 60, period=0.1)
    assert seen >= {0, 1}, seen
    assert len(quanta) > 3, quanta
    q1 = g.mm_now(c)["quantum"]
    assert q0 < max(quanta) <= q1, (q0, sorted(quanta), q1)
    d.save_screenshot(c.path("log", "web-page.png"))


def _metrics(web, families=None):
    """{(sample name, sorted labels): value}, and a family's name to its
    type in `families` when given."""
    st, hdrs, body = web.request("/metrics")
    assert st == 200 and hdrs["Content-Type"].startswith("text/plain"), (st, hdrs)
    out = {}
    for fam in prom_parser.text_string_to_metric_families(body.decode()):
        if families is not None:
            families[fam.name] = fam.type
        # a family without samples yet (no broadcast so far) is still there
        out[(fam.name + ("_total" if fam.type == "counter" else ""), "family")] = None
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_running_slot_follows_the_strobes(gangweb, web, pair):
    """`stormctl now` and /api/v1/now: where the schedule is at an instant,
    from the MM's last strobe, at the real quantum."""
    c = gangweb
    hdr, _, _ = g.mm_status(c)

    def enough(lines):
        # both slots, in more than one quantum, over ten lines
        return (len(lines) > 10 and {x.get("slot") for x in lines} >= {0, 1} and
                len({x.get("quantum") for x in lines}) > 1)
    lines = g.mm_now(c, follow_ms=20, seconds=60, until=enough)
    assert enough(lines), lines
    assert not [x for x in lines if "error" in x], lines
    for x in lines:
        assert x["nslots"] == 2 and x["quantum_us"] == Q_MS * 1000 and not x["stale"], x
        assert str(x["mm_id"]) == hdr["mm_id"], (x, hdr["mm_id"])
    # the quantum count never goes back, moves on, and the slot changes
    # only with it: two samples in one quantum name one slot
    qs = [x["quantum"] for x in lines]
    assert qs == sorted(qs) and qs[-1] > qs[0], qs
    for a, b in zip(lines, lines[1:]):
        if a["quantum"] == b["quantum"] and a["epoch"] == b["epoch"]:
            assert a["slot"] == b["slot"], (a, b)
    assert {x["slot"] for x in lines} == {0, 1}, lines
    # storm-web serves the same, from a sample it takes every 0.2 s and
    # keeps for up to three of those: it moves past a reading taken now,
    # and is never ahead of a reading taken after it
    before = g.mm_now(c)["quantum"]

    def web_moved_on():
        st, _, body = web.request("/api/v1/now")
        after = g.mm_now(c)["quantum"]
        assert st == 200, body
        now = json.loads(body)
        assert now["nslots"] == 2 and now["slot"] in (0, 1), now
        assert now["quantum"] <= after, (now, after)
        return now["quantum"] > before
    wait_for(web_moved_on, 30, "storm-web's running slot past quantum %d" % before)
    st, _, body = web.request("/api/v1")
    assert "/api/v1/now" in json.loads(body)["paths"]


def test_metrics_agree_with_stormctl_show(gangweb, web, pair):
    c = gangweb
    hdr0, nodes, jobs = g.mm_status(c)

    def caught_up():
        # storm-web looks at the file at most every 0.1 s: it comes to
        # this status or a newer one
        m = _metrics(web)
        return m[("storm_quanta_total", ())] >= int(hdr0["quanta"]) and m
    m = wait_for(caught_up, 30, "storm-web serving the status read before")
    hdr1, _, _ = g.mm_status(c)
    assert m[("storm_web_status_up", ())] == 1
    assert m[("storm_quantum_seconds", ())] == pytest.approx(int(hdr0["quantum_us"]) / 1e6)
    assert m[("storm_slots", ())] == int(hdr0["nslots"]) == 2
    # a counter read between two statuses lies between them
    assert int(hdr0["quanta"]) <= m[("storm_quanta_total", ())] <= int(hdr1["quanta"])
    assert m[("storm_jobs", (("policy", "gang"),))] == len(jobs) == 2
    for n, v in nodes.items():
        assert m[("storm_node_state", (("node", n), ("state", "live")))] == 1
        assert m[("storm_node_state", (("node", n), ("state", "drained")))] == 0
        assert ("storm_node_ack_latency_seconds", (("node", n),)) in m
        for kind, k in v["rejected"].items():
            assert m[("storm_node_rejected_messages_total", (("kind", kind), ("node", n)))] >= k
        assert m[("storm_node_failsafe_thaws_total", (("node", n),))] == int(v["failsafe_events"])
    assert m[("storm_nodes", (("state", "live"),))] == len(NODES)
    # every node reported its switch lag (with its heartbeat)
    for n, v in nodes.items():
        assert v["switch_lag_us"] is not None, (n, v)
        assert m[("storm_node_switch_lag_seconds", (("node", n),))] == \
            pytest.approx(int(v["switch_lag_us"]) / 1e6, abs=1e-3)
    assert ("storm_switch_skew_seconds", ()) in m
    # every metric the Grafana dashboard draws is there
    dash = os.path.join(os.path.dirname(__file__), "..", "..", "..", "contribs", "grafana",
                        "storm-dashboard.json")
    with open(dash) as f:
        exprs = [t["expr"] for p in json.load(f)["panels"] for t in p["targets"]]
    names = {k[0] for k in m}
    for e in exprs:
        for name in re.findall(r"storm_[a-z_]+", e):
            # a histogram's series are there once it has samples (a
            # relay's broadcasts: after the first), its family always
            base = re.sub(r"_(bucket|count|sum)$", "", name)
            assert name in names or base in names, (name, e)
    # OpenMetrics when asked for
    st, hdrs, body = web.request("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert st == 200 and "openmetrics" in hdrs["Content-Type"], hdrs
    assert body.rstrip().endswith(b"# EOF")


def _histogram(m, name, labels=()):
    """[(le, cumulative count)] in order, the count and the sum of histogram
    `name` in parsed metrics m, checked for the shape Prometheus expects."""
    buckets = sorted((float(dict(k[1])["le"]), v) for k, v in m.items()
                     if k[0] == name + "_bucket" and
                     tuple(x for x in k[1] if x[0] != "le") == tuple(labels))
    count = m[(name + "_count", tuple(labels))]
    total = m[(name + "_sum", tuple(labels))]
    assert buckets and buckets[-1][0] == float("inf"), buckets
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), buckets
    assert buckets[-1][1] == count, (buckets, count)
    return buckets, count, total


def test_latency_histograms_grow_while_the_pair_runs(gangweb, web, pair):
    c = gangweb
    types = {}
    m0 = _metrics(web, types)
    assert types["storm_strobe_latency_seconds"] == "histogram"
    assert types["storm_confirm_latency_seconds"] == "histogram"
    assert types["storm_broadcast_duration_seconds"] == "histogram"
    _, s0, _ = _histogram(m0, "storm_strobe_latency_seconds")
    _, c0, _ = _histogram(m0, "storm_confirm_latency_seconds")
    # two slots at 40 ms: a strobe and a confirmation every quantum; the
    # MM's status (once a second) and storm-web's look at it follow
    wait_for(lambda: _histogram(_metrics(web), "storm_confirm_latency_seconds")[1] >= c0 + 10,
             30, "confirmations counted")
    m1 = _metrics(web)
    hdr, _, _ = g.mm_status(c)
    sb, s1, ssum = _histogram(m1, "storm_strobe_latency_seconds")
    cb, c1, csum = _histogram(m1, "storm_confirm_latency_seconds")
    assert s1 >= s0 + 10 and c1 >= c0 + 10, (s0, s1, c0, c1)
    # every strobe and confirmation took some time, under its +Inf bound
    assert ssum > 0 and csum > 0
    assert cb[0][1] <= c1
    # as stormctl show has it (one definition): a scrape is not newer
    # than the status read after it
    h = json.loads(subprocess.run(
        [c.stormctl, "show", "--json", "--status", c.path("state", "storm-mm.status")],
        capture_output=True, text=True, check=True).stdout)["header"]
    assert h["strobe_hist_us"]["buckets"][-1] >= s1
    assert h["confirm_hist_us"]["buckets"][-1] >= c1
    assert [le / 1e6 for le in h["strobe_hist_us"]["le"]] == \
        pytest.approx([le for le, _ in sb[:-1]])
    # the quanta served include every strobe's quanta
    assert int(hdr["quanta"]) >= s1
    print("strobes %d -> %d (sum %.3f s), confirmations %d -> %d (sum %.3f s)" % (
        s0, s1, ssum, c0, c1, csum))
    print("strobe buckets (le s, cumulative): %s" % sb)
    print("confirm buckets (le s, cumulative): %s" % cb)


def _jobs_api(web):
    st, _, body = web.request("/api/v1/status")
    assert st == 200, body
    return {j["job_id"]: j for j in json.loads(body)["jobs"]}


def _shares_shown(d):
    """{job id: (share text, share value)} as the jobs table shows them."""
    rows = d.execute_script("""
        return Array.from(document.querySelectorAll('#jobs tbody tr')).map(tr =>
            [tr.dataset.job, tr.querySelector('td.share').innerText,
             tr.querySelector('td.share').dataset.share]);""")
    return {int(r[0]): (r[1], r[2]) for r in rows}


def test_jobs_show_measured_cpu_share_near_their_fair_share(gangweb, web, pair, page):
    a, b, _, _ = pair
    d = page
    # the node managers measure over a second, the MM writes once a second
    wait_for(lambda: all(_jobs_api(web).get(j, {}).get("cpu_share") is not None for j in (a, b)),
             30, "both jobs' measured CPU share")
    samples = {a: [], b: []}

    def sampled():
        # five samples a second apart at least, and each job seen using
        # CPU (however little the host left it) in one of them
        jobs = _jobs_api(web)
        for j in (a, b):
            samples[j].append(jobs[j]["cpu_share"])
            assert jobs[j]["cpus"] == 4 * gangweb.cpus, jobs[j]
        return all(len(samples[j]) >= 5 and max(samples[j]) > 0 for j in (a, b))
    wait_for(sampled, 120, "both jobs' measured CPU share above 0", period=1.1)
    print("measured CPU share (%% of the allocation): %s" % samples)
    for j in (a, b):
        # each spins in its own slot: far less than all of what it was
        # allocated (it is frozen half of the time, and one task spins on
        # each node's CPUs)
        assert sum(samples[j]) / len(samples[j]) < 75, samples
    # the page shows it as a percentage, and /metrics as a ratio
    wait_for(lambda: all(_shares_shown(d).get(j, ("-",))[0].endswith("CPUs")
                         for j in (a, b)), 10, "the shares in the page's table")
    shown = _shares_shown(d)
    for j in (a, b):
        assert re.match(r"^\d+\.\d% of \d+ CPUs$", shown[j][0]), shown
    m = _metrics(web)
    for j in (a, b):
        assert 0 <= m[("storm_job_cpu_share_ratio", (("job", str(j)),))] < 1
        assert m[("storm_job_cpus", (("job", str(j)),))] == 4 * gangweb.cpus


def test_bad_requests_get_errors_never_a_crash(web, pair):
    st, hdrs, body = web.request("/no/such/path")
    assert st == 404 and b"error" in body
    assert web.request("/api/v1/nope")[0] == 404
    assert web.request("/api/v1/status", method="POST")[0] == 405
    assert web.request("/", method="DELETE")[0] == 405
    assert web.request("/", headers={"X-Huge": "a" * 20000})[0] in (400, 431)
    assert web.request("/" + "a" * 20000)[0] in (400, 414)
    # garbage that is not HTTP, and many connections held open at once
    with contextlib.ExitStack() as stack:
        socks = []
        for _ in range(300):
            s = stack.enter_context(socket.create_connection((web.host, web.port), timeout=5))
            socks.append(s)
        socks[0].sendall(b"\x00\xff garbage \r\n\r\n")
        socks[1].sendall(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\nabc")
        st, _, body = web.request("/api/v1/status")
        assert st == 200, body
    assert web.alive()
    st, hdrs, _ = web.request("/")
    assert st == 200 and "script-src 'self'" in hdrs["Content-Security-Policy"]


def _bcasts_shown(d):
    """[(relay, job, phase, progress text, done text)] as the page shows them."""
    return d.execute_script("""
        return Array.from(document.querySelectorAll('#bcasts tbody tr')).map(tr =>
            [tr.dataset.relay, Number(tr.dataset.job), tr.dataset.phase,
             tr.cells[3].innerText, tr.cells[5].innerText]);""")


# Big enough that the broadcast outlasts a status or two (the MM writes
# its status once a second) on loopback here; the script itself is a
# few lines and a comment.
BCAST_MB = 192


def test_broadcast_appears_with_progress_and_finishes(gangweb, web, pair, page):
    c = gangweb
    d = page
    share = c.path("share")
    os.makedirs(share, exist_ok=True)
    script = os.path.join(share, "big.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
        f.truncate(BCAST_MB << 20)
    os.chmod(script, 0o755)
    env = dict(c.env, SLURM_STORM_BCAST="yes")
    seen = []
    try:
        p = subprocess.Popen(["srun", "-N4", "-w", ",".join(NODES), "--ntasks-per-node=1", script],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

        def finished():
            rows = _bcasts_shown(d)
            if any(r[2] == "data" for r in rows) and not any(r[2] == "data" for r in seen):
                d.save_screenshot(c.path("log", "web-page-bcast.png"))
            seen.extend(r for r in rows if r not in seen)
            return any(r[2] == "done" for r in rows) and p.poll() is not None

        wait_for(finished, 180, "the broadcast shown done")
        out = p.communicate()[0].decode(errors="replace")
        assert p.returncode == 0, out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.unlink(script)
    inflight = [r for r in seen if r[2] not in ("done", "failed")]
    assert inflight, "the page never showed the broadcast in flight: %s" % seen
    # progress: part of the file, or the nodes' readiness, before the end
    assert any(r[3].split("%")[0].strip() != "100" or r[2] in ("ready", "manifest")
               for r in inflight), seen
    done = [r for r in seen if r[2] == "done"][-1]
    assert done[4].startswith("3/3"), done    # the three nodes besides the relay
    print("broadcast as the page showed it: %s" % seen)
    # /metrics counts it for its relay
    m = _metrics(web)
    assert m[("storm_relay_broadcasts_total", (("node", done[0]),))] >= 1
    assert m[("storm_relay_broadcast_bytes_total", (("node", done[0]),))] >= BCAST_MB << 20
    # and its duration, as the relay timed it, in the relay's histogram
    buckets, count, total = _histogram(m, "storm_broadcast_duration_seconds",
                                       (("node", done[0]),))
    assert count >= 1 and total > 0, (buckets, count, total)
    # a broadcast of 192 MiB over loopback takes more than a millisecond
    assert buckets[0][1] < count, buckets


def test_node_turns_drained_after_its_node_manager_is_killed(gangweb, web, pair, page):
    c = gangweb
    d = page
    victim = "node4"
    try:
        nm_pid = g.nm_pid(c, victim)
        # hold slurmd, which would restart the NM at once (test_0203), until
        # every view has shown the drain: a node manager back for
        # ReturnAfter is returned to service, and on a loaded host the
        # checks below can take that long
        slurmd = c.procs["slurmd-%s" % victim]
        slurmd.send_signal(signal.SIGSTOP)
        try:
            os.kill(nm_pid, signal.SIGKILL)
            wait_for(lambda: _tile_state(d, victim) == "drained", 60,
                     "%s's tile drained" % victim)
            assert g.mm_status(c)[1][victim]["state"] == "drained"
            # the others are not drained with it; each may have missed a
            # strobe while the MM waited on the dead node (a fail-safe
            # opening), and is back within a few quanta
            wait_for(lambda: all(_tile_state(d, n) in ("live", "suspect") for n in NODES[:3]),
                     30, "the other nodes' tiles live")
            # the event log names it
            wait_for(lambda: any(victim in t and "drained" in t for t in _events_text(d)), 10,
                     "the drain in the event log")
            # /metrics serves the status as storm-web last read it, which
            # the page may have seen first
            drained = ("storm_node_state", (("node", victim), ("state", "drained")))
            wait_for(lambda: _metrics(web).get(drained) == 1, 30,
                     "/metrics showing %s drained" % victim)
        finally:
            slurmd.send_signal(signal.SIGCONT)
    finally:
        c.run(["scontrol", "update", "nodename=%s" % victim, "state=resume"], check=False)
