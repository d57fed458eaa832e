"""Charts of what else moved: config and ACL changes, feature levels, and the log's make-up."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape

from kraftlog.report.model import Event, Timeline
from kraftlog.report.partitions import bucket_span
from kraftlog.report.svg import LEFT, RIGHT, WIDTH, TimeAxis, color, el, hover, legend, svg, text, utc
from kraftlog.state.features import metadata_version_name

#: Record types drawn in their own colour in the composition chart; the rest are "other".
COMPOSITION_TYPES = 7
NOOP = "NO_OP_RECORD"
CHANGE_ROWS = {"config": "configs", "config deleted": "configs", "acl": "ACLs", "acl removed": "ACLs",
               "quota": "quotas", "scram": "SCRAM users", "token": "tokens"}


def table(headers: Sequence[str], rows: Iterable[tuple[Event | None, Sequence[object]]], css: str) -> str:
    """A table whose rows carry their record's offset and time as data attributes."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for ev, cells in rows:
        attrs = f' data-offset="{ev.offset}" data-time="{utc(ev.time)}"' if ev is not None else ""
        body.append(f"<tr{attrs}>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def event_rows(events: Iterable[Event]) -> list[tuple[Event, Sequence[object]]]:
    return [(e, (utc(e.time) if e.time > 0 else "-", e.offset, e.kind, e.subject, e.detail)) for e in events]


def omitted_note(capped) -> str:
    if not capped.omitted:
        return ""
    return f"<p class=note>{capped.omitted} more in the middle are left out; the first and last are listed.</p>"


def _marker_rows(events: list[Event], rows: list[str], ax: TimeAxis, name: str) -> str:
    lane_h, top = 20, 8
    bottom = top + len(rows) * lane_h
    parts = [ax.grid(top, bottom)]
    for i, row in enumerate(rows):
        y = top + i * lane_h + lane_h / 2
        parts.append(text(LEFT - 8, y + 4, row, class_="lane", text_anchor="end"))
        parts.append(el("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": y, "y2": y, "class": "baseline"}))
    for e in events:
        if e.time <= 0:
            continue
        row = rows.index(CHANGE_ROWS.get(e.kind, e.subject if e.subject in rows else rows[-1]))
        y = top + row * lane_h + lane_h / 2
        parts.append(el("circle", {"cx": ax.x(e.time), "cy": y, "r": 4.5, "fill": color(row),
                                   **hover(f"{e.subject}: {e.detail}\n{e.kind}, offset {e.offset}, {utc(e.time)}",
                                           e.offset, e.time, css="mark", data_kind=e.kind)}))
    return svg(bottom + 30, "".join(parts), name)


def changes(m: Timeline, ax: TimeAxis) -> str:
    events = list(m.changes)
    if not events:
        return "<p>No config, ACL, quota, SCRAM or delegation-token changes in this log.</p>"
    rows = list(dict.fromkeys(CHANGE_ROWS[e.kind] for e in events))
    headers = ("time (UTC)", "offset", "change", "resource", "what")
    return (_marker_rows(events, rows, ax, "changes") + omitted_note(m.changes)
            + table(headers, event_rows(events), "events"))


def features(m: Timeline, ax: TimeAxis) -> str:
    events = list(m.feature_events)
    mv = [e for e in events if e.subject == "metadata.version" and e.time > 0]
    start = m.start_metadata_version
    if not events and start is None:
        return "<p>No feature-level records in this log.</p>"
    top, bottom = 22, 92
    levels = sorted({e.value for e in mv} | ({start} if start is not None else set()))
    parts = [ax.grid(top - 8, bottom + 44)]
    if levels:
        span = max(levels[-1] - levels[0], 1)

        def y(level: int) -> float:
            return bottom - (level - levels[0]) / span * (bottom - top)

        points, current = [], start
        if start is not None:
            points.append((ax.lo, start))
        for e in mv:
            if current is not None:
                points.append((e.time, current))
            points.append((e.time, e.value))
            current = e.value
        points.append((ax.hi, current))
        parts.append(el("polyline", {"points": " ".join(f"{ax.x(t):.1f},{y(v):.1f}" for t, v in points),
                                     "class": "step"}))
        for level in (levels[0], levels[-1]):
            parts.append(text(LEFT - 8, y(level) + 4, metadata_version_name(level), class_="tick", text_anchor="end"))
        for e in mv:
            parts.append(el("circle", {"cx": ax.x(e.time), "cy": y(e.value), "r": 5,
                                       **hover(f"metadata.version {e.detail}\noffset {e.offset}, {utc(e.time)}",
                                               e.offset, e.time, css="mark upgrade", data_feature="metadata.version")}))
    others = [e for e in events if e.subject != "metadata.version" and e.time > 0]
    parts.append(text(LEFT - 8, bottom + 30, "other features", class_="lane", text_anchor="end"))
    for e in others:
        parts.append(el("circle", {"cx": ax.x(e.time), "cy": bottom + 26, "r": 4,
                                   **hover(f"{e.subject}: {e.detail}\noffset {e.offset}, {utc(e.time)}",
                                           e.offset, e.time, css="mark feature", data_feature=e.subject)}))
    headers = ("time (UTC)", "offset", "record", "feature", "change")
    return (svg(bottom + 70, "".join(parts), "features") + omitted_note(m.feature_events)
            + table(headers, event_rows(events), "events"))


def composition(m: Timeline, ax: TimeAxis) -> str:
    if not m.buckets:
        return "<p>No records with timestamps in this log.</p>"
    ranked = [t for t, _ in m.type_totals.most_common() if t != NOOP][:COMPOSITION_TYPES]
    colors = {NOOP: "#d5d5d5", **{t: color(i) for i, t in enumerate(ranked)}, "other": "#8c8c8c"}
    top, bottom = 16, 166
    peak = max(b.records for b in m.buckets.values())
    parts = [ax.grid(top, bottom), text(LEFT - 8, top + 4, f"{peak} records", class_="tick", text_anchor="end"),
             text(LEFT - 8, bottom, "0", class_="tick", text_anchor="end"),
             text(WIDTH - RIGHT - 2, top - 4, "NoOp share (line): 0..100%", class_="tick", text_anchor="end")]
    share = []
    for idx, b in sorted(m.buckets.items()):
        x0, x1 = ax.x(idx * m.width), ax.x((idx + 1) * m.width)
        w = max(x1 - x0 - 0.5, 1)
        groups = Counter({NOOP: b.types.get(NOOP, 0)})
        for t, n in b.types.items():
            if t != NOOP:
                groups[t if t in colors else "other"] += n
        y = bottom
        for t in (NOOP, *ranked, "other"):
            h = groups[t] / peak * (bottom - top)
            if h > 0:
                y -= h
                parts.append(el("rect", {"x": x0, "y": y, "width": w, "height": h, "fill": colors[t]}))
        noop_share = groups[NOOP] / b.records
        share.append(f"{(x0 + x1) / 2:.1f},{bottom - noop_share * (bottom - top):.1f}")
        lines = [f"{n} {t}" for t, n in b.types.most_common(6)]
        tip = (f"{bucket_span(m, idx)}\n{b.records} records, offsets {b.first_offset}..{b.last_offset}\n"
               f"NoOp share {noop_share:.0%}\n" + "\n".join(lines))
        parts.append(el("rect", {"x": x0, "y": top, "width": w, "height": bottom - top,
                                 **hover(tip, css="hitbox", data_offsets=f"{b.first_offset}-{b.last_offset}",
                                         data_records=b.records)}))
    parts.append(el("polyline", {"points": " ".join(share), "class": "share"}))
    keys = [*ranked, NOOP] + (["other"] if len(m.type_totals) > len(ranked) + 1 else [])
    totals = table(("record type", "records", "share"),
                   [(None, (t, n, f"{n / m.records:.1%}")) for t, n in m.type_totals.most_common()], "totals")
    return svg(bottom + 30, "".join(parts), "composition") + legend([(colors[t], t) for t in keys]) + totals
