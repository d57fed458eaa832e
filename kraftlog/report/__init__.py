"""Report layer: a node's log walked once into a bounded timeline, drawn as one self-contained HTML page.

Sits above ``state`` (it replays while it walks) and below ``cli``; the Spark job calls the same
two functions.
"""

from kraftlog.report.collect import collect
from kraftlog.report.html import render, write_report
from kraftlog.report.model import Timeline

__all__ = ["Timeline", "collect", "render", "write_report"]
