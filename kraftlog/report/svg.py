"""SVG building blocks: escaped elements, the shared UTC time axis, hover data, colours.

Every chart spans the same time axis, so a moment lines up from chart to chart. Hover data sits
in ``data-*`` attributes (``data-tip`` for people, ``data-offset``/``data-time`` for tools and
tests) read by the page's small script.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

WIDTH = 1000
LEFT = 130  # room for lane labels
RIGHT = 16
PLOT = WIDTH - LEFT - RIGHT

#: Categorical colours, picked to stay apart for the colour-blind as far as ten colours can.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")

_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
            172800, 604800, 1209600, 2592000, 7776000, 31536000)


def utc(ms: int) -> str:
    """ISO-8601 UTC with milliseconds: what hover data and tables show."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def duration(ms: int) -> str:
    """A bucket width as people say it: 200 ms, 10 s, 20 min, 12 h, 2 d."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def el(tag: str, attrs: dict | None = None, body: str = "") -> str:
    """One element; attributes that are None are left out, values are escaped."""
    parts = [tag]
    for name, value in (attrs or {}).items():
        if value is None:
            continue
        if isinstance(value, float):
            value = f"{value:.1f}".rstrip("0").rstrip(".")
        parts.append(f'{name.rstrip("_").replace("_", "-")}="{escape(str(value))}"')
    return f"<{' '.join(parts)}>{body}</{tag}>"


def text(x: float, y: float, content: str, **attrs) -> str:
    return el("text", {"x": x, "y": y, **attrs}, escape(content))


def hover(tip: str, offset: int | None = None, time: int | None = None, css: str = "", **extra) -> dict:
    """Attributes that make an element show ``tip`` on hover; ``offset``/``time`` for one record."""
    return {"class": f"hit {css}".strip(), "data_tip": tip, "data_offset": offset,
            "data_time": utc(time) if time is not None else None, **extra}


def svg(height: float, body: str, label: str) -> str:
    return el("svg", {"viewBox": f"0 0 {WIDTH} {height:.0f}", "role": "img", "aria_label": label,
                      "data_chart": label}, body)


def legend(items: Sequence[tuple[str, str]]) -> str:
    """Colour swatches with names, as HTML so that a long list wraps."""
    return "<ul class=legend>" + "".join(
        f'<li><i style="background:{fill}"></i>{escape(name)}</li>' for fill, name in items) + "</ul>"


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


class TimeAxis:
    """Maps epoch ms to x over the report's span, and draws UTC ticks and grid lines."""

    def __init__(self, lo: int, hi: int) -> None:
        if hi <= lo:
            lo, hi = lo - 500, lo + 500
        self.lo, self.hi = lo, hi

    def x(self, ms: int) -> float:
        ms = min(max(ms, self.lo), self.hi)
        return LEFT + (ms - self.lo) / (self.hi - self.lo) * PLOT

    def ticks(self, most: int = 8) -> list[tuple[int, str]]:
        span_s = (self.hi - self.lo) / 1000
        step = next((s for s in _STEPS_S if span_s / s <= most), _STEPS_S[-1]) * 1000
        first = -(-self.lo // step) * step
        out, last_day = [], None
        for ms in range(first, self.hi + 1, step):
            t = datetime.fromtimestamp(ms / 1000, UTC)
            clock = t.strftime("%H:%M:%S" if step < 60_000 else "%H:%M")
            day = t.strftime("%Y-%m-%d")
            label = clock if step < 86_400_000 else day
            if day != last_day and step < 86_400_000:
                label = f"{day} {clock}"
            last_day = day
            out.append((ms, label))
        return out

    def grid(self, top: float, bottom: float, labels: bool = True) -> str:
        """Vertical grid lines over [top, bottom]; tick labels under the bottom when ``labels``."""
        parts = []
        for ms, label in self.ticks():
            x = self.x(ms)
            parts.append(el("line", {"x1": x, "x2": x, "y1": top, "y2": bottom, "class": "grid"}))
            if labels:
                parts.append(text(x, bottom + 13, label, class_="tick", text_anchor="middle"))
        if labels:
            parts.append(text(WIDTH - RIGHT, bottom + 26, "UTC", class_="tick", text_anchor="end"))
        return "".join(parts)
