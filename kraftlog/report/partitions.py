"""Partition charts: health over time and at the end, churn heat map with ISR size and leader changes,
ISR storms, topic lifetimes."""

from __future__ import annotations

from html import escape
from statistics import median

from kraftlog.report.model import HEALTH, PartitionTrack, Timeline
from kraftlog.report.svg import LEFT, RIGHT, WIDTH, TimeAxis, duration, el, hover, svg, text, utc

#: Partitions drawn at most, by churn; the rest are counted in the note.
TOP_PARTITIONS = 30
#: A bucket is an ISR-shrink storm when it holds at least this many shrinks and STORM_FACTOR times
#: the median of the buckets that hold any.
STORM_MIN, STORM_FACTOR = 10, 5


def bucket_span(m: Timeline, idx: int) -> str:
    return f"{utc(idx * m.width)} .. {utc((idx + 1) * m.width)}"


def short(name: str, most: int = 20) -> str:
    """Fits a lane label: the end (the partition number) is the part worth keeping."""
    return name if len(name) <= most else name[: most - 12] + "\u2026" + name[-11:]


def top_partitions(m: Timeline, n: int = TOP_PARTITIONS) -> list[PartitionTrack]:
    """Most churn first; ties (and quiet clusters) by name, so small clusters show every partition."""
    return sorted(m.partitions.values(), key=lambda t: t.rank)[:n]


def _isr_line(t: PartitionTrack, ax: TimeAxis, y: float, h: float) -> str:
    """ISR size as a step line inside the row: full ISR at the top, an empty one at the bottom."""
    def level(isr: int) -> float:
        return y + 2 + (1 - min(isr / max(t.replicas, 1), 1)) * (h - 4)

    start = t.start_time if t.start_time and t.start_time > 0 else ax.lo
    end = t.removed_time if t.removed_time else ax.hi
    points, current = [(ax.x(start), level(t.start_isr))], t.start_isr
    for idx in sorted(t.cells):
        cell = t.cells[idx]
        x = ax.x(cell.last_time)
        points += [(x, level(current)), (x, level(cell.isr))]
        current = cell.isr
    points.append((ax.x(end), level(current)))
    return el("polyline", {"points": " ".join(f"{x:.1f},{y:.1f}" for x, y in points), "class": "isr"})


def heatmap(m: Timeline, ax: TimeAxis) -> str:
    rows = top_partitions(m)
    if not rows:
        return "<p>No partitions in this log.</p>"
    row_h, top = 16, 8
    bottom = top + len(rows) * row_h
    peak = max((c.leader_changes + c.shrinks + c.expands for t in rows for c in t.cells.values()), default=1)
    parts = [ax.grid(top, bottom)]
    index = {}
    for i, t in enumerate(rows):
        y = top + i * row_h
        index[(t.topic_id, t.partition)] = y
        summary = (f"{t.name} (topic id {t.topic_id}), {t.replicas} replicas\nleader changes {t.leader_changes}, "
                   f"ISR shrinks {t.shrinks}, expands {t.expands}, unclean elections {t.unclean}")
        parts.append(text(LEFT - 8, y + 12, short(t.name), text_anchor="end",
                          **hover(summary, css="lane", data_partition=t.name)))
        start = t.start_time if t.start_time and t.start_time > 0 else ax.lo
        end = t.removed_time if t.removed_time else ax.hi
        parts.append(el("rect", {"x": ax.x(start), "y": y + 1, "width": max(ax.x(end) - ax.x(start), 1),
                                 "height": row_h - 2, "class": "alive"}))
        for idx, c in sorted(t.cells.items()):
            x0, x1 = ax.x(idx * m.width), ax.x((idx + 1) * m.width)
            churn = c.leader_changes + c.shrinks + c.expands
            under = c.min_isr < t.replicas
            tip = (f"{t.name}, {bucket_span(m, idx)}\nleader changes {c.leader_changes}, ISR shrinks {c.shrinks}, "
                   f"expands {c.expands}\nISR {c.isr} of {t.replicas} after (smallest {c.min_isr}), "
                   f"leader {c.leader}\noffsets {c.first_offset}..{c.last_offset}")
            parts.append(el("rect", {
                "x": x0, "y": y + 1, "width": max(x1 - x0, 1.5), "height": row_h - 2,
                "fill_opacity": round(0.25 + 0.75 * churn / peak, 2),
                **hover(tip, css="cell under" if under else "cell", data_offsets=f"{c.first_offset}-{c.last_offset}")}))
        parts.append(_isr_line(t, ax, y, row_h))
    for ev in m.leader_events:
        y = index.get(ev.key)
        if y is not None and ev.time > 0:
            parts.append(el("rect", {"x": ax.x(ev.time) - 1.25, "y": y, "width": 2.5, "height": row_h,
                                     **hover(f"{ev.subject}: {ev.detail}\noffset {ev.offset}, {utc(ev.time)}",
                                             ev.offset, ev.time, css="leader-change", data_partition=ev.subject)}))
    total = len(m.partitions) + m.partitions_dropped
    notes = [f"{total} partitions in all; "
             + ("all shown." if len(rows) == total else f"the {len(rows)} with most churn shown.")]
    if m.leader_events.omitted:
        notes.append(f"Leader-change ticks: the first and last {len(m.leader_events)} of "
                     f"{m.leader_events.total} are drawn; the cells count them all.")
    return svg(bottom + 32, "".join(parts), "partitions") + "".join(f"<p class=note>{n}</p>" for n in notes)


def storms(m: Timeline) -> list[int]:
    """Buckets whose ISR shrinks stand out: STORM_MIN or more, and STORM_FACTOR times the usual."""
    counts = [b.isr_shrinks for b in m.buckets.values() if b.isr_shrinks]
    if not counts:
        return []
    floor = max(STORM_MIN, STORM_FACTOR * median(counts))
    return sorted(i for i, b in m.buckets.items() if b.isr_shrinks >= floor)


def isr_storms(m: Timeline, ax: TimeAxis) -> str:
    busy = {i: b for i, b in m.buckets.items() if b.isr_shrinks or b.isr_expands or b.leader_changes}
    if not busy:
        return "<p>No ISR changes or leader changes in this log.</p>"
    top, mid, half = 20, 90, 66
    peak = max(max(b.isr_shrinks, b.isr_expands) for b in busy.values()) or 1
    flagged = set(storms(m))
    parts = [ax.grid(top, mid + half + 4),
             el("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": mid, "y2": mid, "class": "baseline"}),
             text(LEFT - 8, mid - half / 2, "expands", class_="lane", text_anchor="end"),
             text(LEFT - 8, mid + half / 2, "shrinks", class_="lane", text_anchor="end"),
             text(LEFT - 8, top - 6, f"max {peak} per {duration(m.width)}", class_="tick", text_anchor="end")]
    for idx, b in sorted(busy.items()):
        x0, x1 = ax.x(idx * m.width), ax.x((idx + 1) * m.width)
        w = max(x1 - x0 - 0.5, 1.5)
        up, down = b.isr_expands / peak * half, b.isr_shrinks / peak * half
        parts.append(el("rect", {"x": x0, "y": mid - up, "width": w, "height": up, "class": "expand"}))
        parts.append(el("rect", {"x": x0, "y": mid, "width": w, "height": down, "class": "shrink"}))
        storm = idx in flagged
        tip = (f"{bucket_span(m, idx)}{'  ISR SHRINK STORM' if storm else ''}\nISR shrinks {b.isr_shrinks}, "
               f"expands {b.isr_expands}, leader changes {b.leader_changes}\noffsets {b.first_offset}..{b.last_offset}")
        parts.append(el("rect", {"x": x0, "y": top, "width": w, "height": 2 * half + 4,
                                 **hover(tip, css="hitbox", data_offsets=f"{b.first_offset}-{b.last_offset}",
                                         data_storm="1" if storm else None)}))
        if storm:
            parts.append(text(x0 + w / 2, mid + half + 2, "storm", class_="storm", text_anchor="middle"))
    return svg(mid + half + 32, "".join(parts), "isr")


def topics(m: Timeline, ax: TimeAxis) -> str:
    events = [e for e in m.topic_events if e.time > 0]
    if not events and not m.start_topics:
        return "<p>No topics in this log.</p>"
    top, bottom = 14, 104
    peak = max([m.start_topics] + [e.value or 0 for e in events]) or 1

    def y(count: int) -> float:
        return bottom - count / peak * (bottom - top)

    points, count = [(ax.lo, m.start_topics)], m.start_topics
    for e in events:
        points += [(e.time, count), (e.time, e.value)]
        count = e.value
    points.append((ax.hi, count))
    parts = [ax.grid(top, bottom), text(LEFT - 8, top + 4, f"{peak} topics", class_="tick", text_anchor="end"),
             text(LEFT - 8, bottom, "0", class_="tick", text_anchor="end"),
             el("polyline", {"points": " ".join(f"{ax.x(t):.1f},{y(c):.1f}" for t, c in points), "class": "step"})]
    for e in events:
        x, yy = ax.x(e.time), y(e.value)
        shape = f"M{x - 5:.1f},{yy + 4:.1f}h10l-5,-9z" if e.kind == "created" else f"M{x - 5:.1f},{yy - 4:.1f}h10l-5,9z"
        parts.append(el("path", {"d": shape,
                                 **hover(f"topic {e.subject} {e.kind}\n{e.detail}\noffset {e.offset}, {utc(e.time)}",
                                         e.offset, e.time, css=f"topic {e.kind}", data_topic=e.subject)}))
    return svg(bottom + 30, "".join(parts), "topics")


#: Partitions listed per health state in the end-of-log table; the count says how many there are.
HEALTH_ROWS = 25
HEALTH_COLORS = ("#d62728", "#f28e2b", "#e15759", "#edc948", "#76b7b2")


def _health_stretches(m: Timeline, i: int) -> list[tuple[int, int, int, int]]:
    """(from ms, to ms, most, at end) for state ``i``: each bucket where counts changed, and the
    stretch after it up to the next such bucket, which keeps the count it ended with."""
    out, current = [], m.start_health[i]
    lo = min(m.buckets) * m.width if m.buckets else 0
    changed = sorted((idx, b) for idx, b in m.buckets.items() if b.health_peak is not None)
    edge = lo
    for idx, b in changed:
        start = idx * m.width
        if current and start > edge:
            out.append((edge, start, current, current))
        out.append((start, start + m.width, b.health_peak[i], b.health_end[i]))
        current, edge = b.health_end[i], start + m.width
    if current and m.buckets:
        out.append((edge, (max(m.buckets) + 1) * m.width, current, current))
    return out


def health(m: Timeline, ax: TimeAxis) -> str:
    """One lane per health state over time, then the partitions in each state at the end of the log."""
    if not m.partitions and not any(m.start_health):
        return "<p>No partitions in this log.</p>"
    lane_h, gap, top = 18, 6, 8
    bottom = top + len(HEALTH) * (lane_h + gap)
    parts = [ax.grid(top, bottom)]
    for i, state in enumerate(HEALTH):
        y = top + i * (lane_h + gap)
        parts.append(text(LEFT - 8, y + 13, state, class_="lane", text_anchor="end", data_health=state))
        parts.append(el("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": y + lane_h / 2, "y2": y + lane_h / 2,
                                 "class": "baseline"}))
        stretches = _health_stretches(m, i)
        peak = max((s[2] for s in stretches), default=0) or 1
        for start, end, most, last in stretches:
            if not most:
                continue
            tip = (f"{state}: {most} partitions at most, {last} at the end of\n{utc(start)} .. {utc(end)}")
            parts.append(el("rect", {"x": ax.x(start), "y": y, "width": max(ax.x(end) - ax.x(start), 1.5),
                                     "height": lane_h, "fill": HEALTH_COLORS[i],
                                     "fill_opacity": round(0.3 + 0.7 * most / peak, 2),
                                     **hover(tip, css="health", data_health=state, data_most=most)}))
    return svg(bottom + 30, "".join(parts), "health") + _health_table(m)


def _health_table(m: Timeline) -> str:
    rows = []
    for state in HEALTH:
        found = m.end_health.get(state, [])
        rows.append(f"<tr data-health=\"{escape(state)}\"><th>{escape(state)}</th><td>{len(found)}</td><td>"
                    + escape(", ".join(f"{p.name} (leader {p.leader}, ISR {list(p.isr)} of {p.replicas}, "
                                       f"min ISR {p.min_isr}" + (f", ELR {list(p.elr)}" if p.elr else "") + ")"
                                       for p in found[:HEALTH_ROWS]))
                    + (f" and {len(found) - HEALTH_ROWS} more" if len(found) > HEALTH_ROWS else "") + "</td></tr>")
    return ("<table class=health><thead><tr><th>at the end of the log</th><th>partitions</th><th>which</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")
