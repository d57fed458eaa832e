"""Lane charts: who led the metadata quorum in each Raft epoch, and each broker's state."""

from __future__ import annotations

from kraftlog.report.model import Capped, Event, Timeline
from kraftlog.report.svg import LEFT, WIDTH, TimeAxis, color, el, hover, legend, svg, text, utc

#: Lanes drawn at most (brokers beyond are listed as left out), so the page stays small.
MAX_LANES = 40
STATE_COLORS = {"active": "#59a14f", "fenced": "#f28e2b", "shutdown": "#b07aa1"}
STATE_NAMES = {"active": "registered, unfenced", "fenced": "fenced", "shutdown": "in controlled shutdown",
               "absent": "not registered"}


def _gap(ax: TimeAxis, capped: Capped, y: float, h: float) -> str:
    """A hatched stretch where a capped list left items out (between its head and its tail)."""
    if not capped.omitted or not capped.head or not capped.tail:
        return ""
    x0, x1 = ax.x(capped.head[-1].time), ax.x(capped.tail[0].time)
    tip = f"{capped.omitted} more left out here to keep the page small"
    return el("rect", {"x": x0, "y": y, "width": max(x1 - x0, 2), "height": h, **hover(tip, css="omitted")})


def controller(m: Timeline, ax: TimeAxis) -> str:
    epochs = [e for e in m.epochs if e.time > 0]
    if not epochs:
        return "<p>No Raft epochs with timestamps in this log.</p>"
    band, line_top, line_bottom, marks = 20, 62, 122, 142
    parts = [ax.grid(10, marks + 10), text(LEFT - 8, band + 16, "leader", class_="lane", text_anchor="end"),
             text(LEFT - 8, (line_top + line_bottom) / 2 + 4, "epoch", class_="lane", text_anchor="end"),
             text(LEFT - 8, marks + 4, "voters, controllers", class_="lane", text_anchor="end")]
    ends = [e.time for e in epochs[1:]] + [ax.hi]
    for ep, end in zip(epochs, ends, strict=True):
        x0, x1 = ax.x(ep.time), ax.x(end)
        who = f"node {ep.leader}" if ep.leader >= 0 else "unknown (no LeaderChange record read)"
        tip = (f"epoch {ep.epoch}: leader {who}\nvoters {ep.voters or '?'}\nfrom offset {ep.offset}, {utc(ep.time)}")
        fill = color(ep.leader) if ep.leader >= 0 else "#bab0ac"
        parts.append(el("rect", {"x": x0, "y": band, "width": max(x1 - x0, 1.5), "height": 24, "fill": fill,
                                 **hover(tip, ep.offset, ep.time, data_epoch=ep.epoch, data_leader=ep.leader)}))
        if x1 - x0 > 44 and ep.leader >= 0:
            parts.append(text(x0 + 4, band + 16, f"node {ep.leader}", class_="inband"))
    parts.append(_gap(ax, m.epochs, band, 24))
    lo, hi = epochs[0].epoch, max(e.epoch for e in epochs)
    scale = (line_bottom - line_top) / max(hi - lo, 1)
    points = []
    for ep, end in zip(epochs, ends, strict=True):
        y = line_bottom - (ep.epoch - lo) * scale
        points += [f"{ax.x(ep.time):.1f},{y:.1f}", f"{ax.x(end):.1f},{y:.1f}"]
    parts.append(el("polyline", {"points": " ".join(points), "class": "step"}))
    parts.append(text(LEFT + 2, line_top - 3, f"{hi}", class_="tick"))
    parts.append(text(LEFT + 2, line_bottom + 11, f"{lo}", class_="tick"))
    for ev in m.controller_events:
        if ev.time > 0:
            parts.append(el("circle", {"cx": ax.x(ev.time), "cy": marks, "r": 4,
                                       **hover(f"{ev.subject}: {ev.detail}\noffset {ev.offset}, {utc(ev.time)}",
                                               ev.offset, ev.time, css=f"mark {ev.kind}")}))
    leaders = sorted({e.leader for e in epochs if e.leader >= 0})
    return svg(marks + 30, "".join(parts), "controller") + legend([(color(n), f"node {n} leads") for n in leaders])


def _segments(lane_events: list[Event], lo: int, hi: int) -> list[tuple[int, int, Event | None]]:
    """(from, to, event that began it) for each stretch of one state; the first has no event."""
    times = [lo] + [e.time for e in lane_events] + [hi]
    events: list[Event | None] = [None, *lane_events]
    return [(times[i], times[i + 1], events[i]) for i in range(len(events))]


def brokers(m: Timeline, ax: TimeAxis) -> str:
    ids = sorted(m.brokers)
    if not ids:
        return "<p>No broker registrations in this log.</p>"
    shown = ids[:MAX_LANES]
    lane_h, gap, top = 18, 6, 8
    bottom = top + len(shown) * (lane_h + gap)
    parts = [ax.grid(top, bottom)]
    for i, bid in enumerate(shown):
        lane = m.brokers[bid]
        y = top + i * (lane_h + gap)
        events = [e for e in lane.events if e.time > 0]
        parts.append(text(LEFT - 8, y + 13, f"broker {bid}", class_="lane", text_anchor="end",
                          data_broker=bid))
        parts.append(el("line", {"x1": LEFT, "x2": WIDTH - 16, "y1": y + lane_h / 2, "y2": y + lane_h / 2,
                                 "class": "baseline"}))
        for start, end, ev in _segments(events, ax.lo, ax.hi):
            state = ev.kind if ev else lane.start_state
            if state == "absent":
                continue
            x0, x1 = ax.x(start), ax.x(end)
            parts.append(el("rect", {"x": x0, "y": y, "width": max(x1 - x0, 1), "height": lane_h,
                                     "fill": STATE_COLORS[state], "class": "state"}))
        parts.append(_gap(ax, lane.events, y, lane_h))
        for ev in events:
            tip = f"broker {bid}: {ev.detail}\noffset {ev.offset}, {utc(ev.time)}"
            parts.append(el("rect", {"x": ax.x(ev.time) - 1.5, "y": y - 2, "width": 3, "height": lane_h + 4,
                                     **hover(tip, ev.offset, ev.time, css=f"event {ev.kind}", data_broker=bid,
                                             data_state=ev.kind)}))
    items = [(STATE_COLORS[s], STATE_NAMES[s]) for s in ("active", "fenced", "shutdown")]
    note = "" if len(ids) == len(shown) else f"<p class=note>{len(ids) - len(shown)} more brokers not drawn.</p>"
    return svg(bottom + 30, "".join(parts), "brokers") + legend(items) + note
