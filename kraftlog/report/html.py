"""The report page: one self-contained HTML file (inline CSS, SVG and a few lines of JS; nothing
fetched), so it can be mailed, attached to a ticket, or opened on an air-gapped laptop."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from html import escape

from kraftlog import __version__
from kraftlog.report import activity, lanes, partitions
from kraftlog.report.model import Timeline
from kraftlog.report.svg import TimeAxis, duration, legend, utc

Chart = Callable[[Timeline, TimeAxis], str]

#: (anchor, title, what it answers, chart), in the order a responder reads them.
SECTIONS: tuple[tuple[str, str, str, Chart], ...] = (
    ("controller", "Controller leadership and Raft epochs",
     "Which node led the metadata quorum in each epoch (from LeaderChange control records and batch "
     "epochs); marks are voter changes and controller registrations.", lanes.controller),
    ("brokers", "Brokers", "Registration, fencing and controlled shutdown, one lane per broker; "
     "ticks are the records that changed it.", lanes.brokers),
    ("health", "Partition health",
     "Partitions offline (no leader: Kafka's OfflinePartitionsCount), whose leader is a fenced or unregistered "
     "broker, under min ISR (min.insync.replicas: the topic's config, the active controller's, the cluster "
     "default, else Kafka's default 1; a broker's static config is not in the log), under-replicated (ISR "
     "smaller than the replicas) and with eligible leader replicas (ELR), over time (darker: more at once) and "
     "at the end of the log.", partitions.health),
    ("partitions", "Partitions: leader changes and ISR size",
     "Cells count leader changes and ISR shrinks/expands per time bucket (red: the ISR fell below the "
     "replica count); the line is the ISR size (top = full); ticks are leader changes.", partitions.heatmap),
    ("isr", "ISR shrink/expand storms", "ISR shrinks (down) and expands (up) across all partitions per bucket.",
     partitions.isr_storms),
    ("topics", "Topics", "Topic count; triangles mark creations (up) and deletions (down).", partitions.topics),
    ("changes", "Config and ACL changes", "Configs, ACLs, client quotas, SCRAM users and delegation tokens; "
     "secret values are redacted.", activity.changes),
    ("features", "metadata.version and features", "Finalized feature levels and kraft.version.",
     activity.features),
    ("composition", "Log composition", "Records per time bucket by type; the line is the NoOp share.",
     activity.composition),
)

_LEGENDS = {
    "partitions": [("#4e79a7", "changes in the bucket (darker: more)"), ("#e15759", "ISR below replicas"),
                   ("#222222", "ISR size"), ("#d62728", "leader change")],
    "isr": [("#59a14f", "ISR expands"), ("#e15759", "ISR shrinks")],
}

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:17px;margin:28px 0 2px;border-top:1px solid #ddd;padding-top:14px}
p.what{margin:0 0 6px;color:#555}p.note{margin:2px 0;color:#777;font-size:12px}
svg{width:100%;height:auto;display:block}text{font-size:11px;fill:#333}
.tick{fill:#777;font-size:10px}.lane{font-size:11px}.inband{fill:#fff;font-size:11px;pointer-events:none}
.grid{stroke:#e6e6e6}.baseline{stroke:#ccc}.step{fill:none;stroke:#4e79a7;stroke-width:2}
.share{fill:none;stroke:#333;stroke-width:1.5;pointer-events:none}.isr{fill:none;stroke:#222;stroke-width:1}
.alive{fill:#f3f3f3}.cell{fill:#4e79a7}.cell.under{fill:#e15759}.leader-change{fill:#d62728}
.expand{fill:#59a14f}.shrink{fill:#e15759}.storm{fill:#e15759;font-weight:bold}.hitbox{fill:transparent}
.omitted{fill:#eee;stroke:#999;stroke-dasharray:3 2}.mark{stroke:#fff;stroke-width:1}.upgrade{fill:#4e79a7}
.feature{fill:#f28e2b}.event{fill:#333}.topic.created{fill:#59a14f}.topic.deleted{fill:#e15759}
.hit:hover{stroke:#000;stroke-width:1.5}
ul.legend{list-style:none;padding:0;margin:2px 0 4px;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px}
ul.legend i{display:inline-block;width:10px;height:10px;margin-right:5px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}td,th{padding:2px 8px;text-align:left;border-bottom:1px solid #eee}
table.events{width:100%}table.events td:nth-child(2){font-variant-numeric:tabular-nums}
dl{display:grid;grid-template-columns:max-content 1fr;gap:0 14px;margin:8px 0}dt{color:#666}dd{margin:0}
nav a{margin-right:12px}#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:6px 8px;
border-radius:4px;font-size:12px;white-space:pre;max-width:60ch;z-index:1}
"""

# Hover: the nearest element with data-tip shows it next to the pointer (kept inside the window).
_JS = """
(function(){
  var tip=document.getElementById('tip');
  document.addEventListener('mousemove',function(e){
    var t=e.target.closest?e.target.closest('[data-tip]'):null;
    if(!t){tip.hidden=true;return;}
    tip.textContent=t.getAttribute('data-tip');tip.hidden=false;
    var x=e.clientX+14,y=e.clientY+14;
    if(x+tip.offsetWidth>innerWidth-8)x=Math.max(8,e.clientX-tip.offsetWidth-14);
    if(y+tip.offsetHeight>innerHeight-8)y=Math.max(8,e.clientY-tip.offsetHeight-14);
    tip.style.left=x+'px';tip.style.top=y+'px';
  });
})();
"""


def _summary(m: Timeline) -> str:
    span = m.time_range
    rows = [
        ("cluster", m.cluster_id or "unknown"), ("node", m.node_id if m.node_id is not None else "unknown"),
        ("source", m.source), ("replayed from", m.base),
        ("offsets", f"{m.first_offset}..{m.last_offset}" if m.records else "none"),
        ("time (UTC)", f"{utc(span[0])} .. {utc(span[1])}" if span else "none"),
        ("records", f"{m.records:,}" + (f" ({m.untimed:,} without a timestamp, left out of the charts)"
                                        if m.untimed else "")),
        ("bucket width", duration(m.width)),
    ]
    if m.aborted_records:
        rows.append(("aborted", f"{m.aborted_records} records of aborted metadata transactions, not applied"))
    rows.append(("problems", f"{m.problems.total}" if m.problems.total else "none"))
    out = "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in rows) + "</dl>"
    if m.problems.total:
        items = "".join(f"<li>{escape(p)}</li>" for p in m.problems)
        more = f"<li>... and {m.problems.omitted} more</li>" if m.problems.omitted else ""
        out += f"<details><summary>Problems</summary><ul>{items}{more}</ul></details>"
    return out


def render(m: Timeline) -> str:
    """The whole page as text."""
    span = m.time_range
    ax = TimeAxis(*span) if span else TimeAxis(0, 1000)
    title = f"kraftlog report: cluster {m.cluster_id or '?'}, node {m.node_id if m.node_id is not None else '?'}"
    nav = "".join(f'<a href="#{anchor}">{escape(name)}</a>' for anchor, name, _, _ in SECTIONS)
    sections = []
    for anchor, name, what, chart in SECTIONS:
        body = chart(m, ax) + (legend(_LEGENDS[anchor]) if anchor in _LEGENDS and span else "")
        sections.append(f'<section id="{anchor}"><h2>{escape(name)}</h2><p class=what>{escape(what)}</p>'
                        f"{body}</section>")
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{_CSS}</style></head>"
            f"<body><h1>{escape(title)}</h1><p class=note>made by kraftlog {__version__} on {made}; "
            f"all times UTC; hover a mark for its offset and time</p>{_summary(m)}<nav>{nav}</nav>"
            f"{''.join(sections)}<div id=tip hidden></div><script>{_JS}</script></body></html>")


def write_report(model: Timeline, path: str | os.PathLike) -> int:
    """Write the page to ``path``; returns its size in bytes."""
    data = render(model).encode()
    with open(path, "wb") as f:
        f.write(data)
    return len(data)
