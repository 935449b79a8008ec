# SPDX-License-Identifier: GPL-2.0-or-later
"""storm_web_metrics.py - the Machine Manager's status as Prometheus metrics.

Every figure comes from the status (storm_status.h, read by
storm_web_status.py); names follow Prometheus' conventions: base units
(seconds), counters end in _total, one label per dimension (node=, kind=,
state=, policy=).  The strobe and confirm costs come twice: as the MM's
moving averages (gauges) and as the histograms of every one it measured
(fixed buckets kept by the MM, src/common/storm_hist.h); broadcast
durations as each relay's histogram of the broadcasts it ended.
"""
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily)
from prometheus_client.registry import CollectorRegistry
from prometheus_client import exposition
from prometheus_client.utils import floatToGoString

NODE_VIEWS = ("live", "suspect", "drained", "fail-safe", "unknown")


def _buckets(h):
    """A status histogram (storm_status.h's JSON: le in us, cumulative
    buckets, the last one +Inf, sum in us) as prometheus_client wants it:
    [(le in seconds, count), ..., ("+Inf", count)] and the sum in seconds."""
    les = [floatToGoString(le / 1e6) for le in h["le"]] + ["+Inf"]
    return list(zip(les, h["buckets"])), h["sum"] / 1e6


def _families(st, err, reads):
    up = GaugeMetricFamily("storm_web_status_up",
                           "1 when storm-web read the Machine Manager's status and it is fresh")
    up.add_metric([], 1 if st is not None and not st["stale"] and not err else 0)
    yield up
    r = CounterMetricFamily("storm_web_status_reads",
                            "Status files storm-web read (stormctl show --json runs that succeeded)")
    r.add_metric([], reads)
    yield r
    if st is None:
        return
    h = st["header"]
    g = GaugeMetricFamily
    c = CounterMetricFamily
    simple = [
        (g, "storm_status_age_seconds", "Seconds since the Machine Manager wrote its status", st["age_s"]),
        (g, "storm_quantum_seconds", "Configured quantum (Timeslice)", h["quantum_us"] / 1e6),
        (g, "storm_quantum_period_seconds", "Measured quantum (moving average)", h["period_us"] / 1e6),
        (g, "storm_strobe_seconds", "Cost of a strobe (moving average)", h["strobe_us"] / 1e6),
        (g, "storm_confirm_seconds", "Cost of a strobe's confirmation (moving average)", h["confirm_us"] / 1e6),
        (c, "storm_quanta", "Quanta served", h["quanta"]),
        (c, "storm_late_quanta", "Strobes applied late", h["late_quanta"]),
        (c, "storm_confirm_timeouts", "Confirmations that timed out", h["confirm_timeouts"]),
        (c, "storm_mm_rejected_messages", "Fabric messages the Machine Manager refused", h["rejected_mm"]),
        (g, "storm_slot", "The time slot running at the last status", h["slot"]),
        (g, "storm_slots", "Time slots in the matrix", h["nslots"]),
        (g, "storm_epoch", "Epoch of the last strobe", h["epoch"]),
        (g, "storm_table_generation", "Generation of the job table", h["table_gen"]),
        (g, "storm_failsafe_seconds", "FailSafe: no strobe for this long thaws a node's jobs", h["failsafe_us"] / 1e6),
    ]
    for kind, name, doc, v in simple:
        m = kind(name, doc)
        m.add_metric([], v)
        yield m
    for key, name, doc in (
            ("strobe_hist_us", "storm_strobe_latency_seconds",
             "Time the Machine Manager took to send each strobe to the live nodes"),
            ("confirm_hist_us", "storm_confirm_latency_seconds",
             "Time the Machine Manager took to confirm each strobe (COMPARE-AND-WRITE)")):
        hm = HistogramMetricFamily(name, doc)
        if h.get(key):
            b, s = _buckets(h[key])
            hm.add_metric([], b, s)
        yield hm

    ack = g("storm_node_ack_latency_seconds", "Last one-node acknowledgement round trip", labels=["node"])
    miss = g("storm_node_missed_quanta", "Consecutive quanta without an acknowledgement", labels=["node"])
    state = g("storm_node_state", "1 for the node's state (live, suspect, drained, fail-safe, unknown)",
              labels=["node", "state"])
    rej = c("storm_node_rejected_messages", "Messages the node manager refused, by where",
            labels=["node", "kind"])
    fs = c("storm_node_failsafe_thaws", "Times the node's fail-safe thawed its jobs for lack of strobes",
           labels=["node"])
    fso = g("storm_node_failsafe_open", "1 while the node's fail-safe is open", labels=["node"])
    count = g("storm_nodes", "Nodes by state", labels=["state"])
    lag = g("storm_node_switch_lag_seconds",
            "Median time from the MM sending a strobe to the node's switch done "
            "(needs synchronized clocks)", labels=["node"])
    by_view = {v: 0 for v in NODE_VIEWS}
    for n in st["nodes"]:
        name = n["name"]
        ack.add_metric([name], n["ack_us"] / 1e6)
        miss.add_metric([name], n["misses"])
        for v in NODE_VIEWS:
            state.add_metric([name, v], 1 if n["view"] == v else 0)
        by_view[n["view"]] = by_view.get(n["view"], 0) + 1
        for kind, v in n.get("rejected", {}).items():
            rej.add_metric([name, kind], v)
        fs.add_metric([name], n.get("failsafe_events", 0))
        if n.get("switch_lag_us") is not None:
            lag.add_metric([name], n["switch_lag_us"] / 1e6)
        fso.add_metric([name], n.get("failsafe_open", 0))
    for v, k in by_view.items():
        count.add_metric([v], k)
    yield from (ack, miss, state, rej, fs, fso, count, lag)
    skew = g("storm_switch_skew_seconds", "Spread of the live nodes' switch lags")
    if st.get("switch_skew_us") is not None:
        skew.add_metric([], st["switch_skew_us"] / 1e6)
    yield skew

    bc = c("storm_relay_broadcasts", "Broadcasts this node relayed for srun", labels=["node"])
    bf = c("storm_relay_broadcast_failures", "Broadcasts this node relayed that failed", labels=["node"])
    bb = c("storm_relay_broadcast_bytes", "Bytes delivered by the broadcasts this node relayed",
           labels=["node"])
    bl = g("storm_relay_broadcast_last_seconds",
           "Duration of the relay's latest broadcast (so far, while in flight)", labels=["node"])
    inflight = 0
    for b in st.get("bcasts", []):
        bc.add_metric([b["name"]], b["count"])
        bf.add_metric([b["name"]], b["failed"])
        bb.add_metric([b["name"]], b["bytes"])
        bl.add_metric([b["name"]], b["elapsed_us"] / 1e6)
        inflight += 1 if b["in_flight"] else 0
    bi = g("storm_broadcasts_in_flight", "Broadcasts the relays report in flight")
    bi.add_metric([], inflight)
    bd = HistogramMetricFamily("storm_broadcast_duration_seconds",
                               "Duration of each broadcast the node relayed, done or failed, "
                               "as the relay timed it", labels=["node"])
    for b in st.get("bcasts", []):
        if b.get("dur_hist_us"):
            buckets, s = _buckets(b["dur_hist_us"])
            bd.add_metric([b["name"]], buckets, s)
    yield from (bc, bf, bb, bl, bi, bd)

    jobs = g("storm_jobs", "Jobs in the matrix by policy", labels=["policy"])
    by_policy = {}
    for j in st["jobs"]:
        p = j.get("policy") or "unknown"
        by_policy[p] = by_policy.get(p, 0) + 1
    for p, k in sorted(by_policy.items()):
        jobs.add_metric([p], k)
    yield jobs
    share = g("storm_job_cpu_share_ratio",
              "CPU the job used over about the last second, measured on its nodes, "
              "over the CPUs Slurm allocated it", labels=["job"])
    alloc = g("storm_job_cpus", "CPUs Slurm allocated the job", labels=["job"])
    for j in st["jobs"]:
        if j.get("cpus"):
            alloc.add_metric([str(j["job_id"])], j["cpus"])
        if j.get("cpu_share") is not None:
            share.add_metric([str(j["job_id"])], j["cpu_m"] / 1000.0 / j["cpus"])
    yield from (share, alloc)


class _Collector:
    def __init__(self):
        self.snapshot = (None, "no status", 0)

    def collect(self):
        return _families(*self.snapshot)


def render(st, err, reads, accept=""):
    """The metrics text for this status and the content type to send:
    OpenMetrics when the scraper asks for it, else Prometheus' text."""
    reg = CollectorRegistry(auto_describe=False)
    col = _Collector()
    col.snapshot = (st, err, reads)
    reg.register(col)
    encoder, ctype = exposition.choose_encoder(accept)
    return encoder(reg), ctype
