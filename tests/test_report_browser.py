"""The report of a cluster with known events, rendered by headless Chromium: a screenshot shows the
charts, the rendered DOM holds their data, and hovering shows a record's offset and UTC time."""

import shutil
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_report_cluster import utc, write_cluster

from kraftlog.cli.main import main

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not on PATH (Debian: apt-get install chromium; "
    "scripts/setup.sh installs it when run as root)")

#: Fills the charts use for large areas (lanes, bands), as RGB.
GREEN, ORANGE, PURPLE = (0x59, 0xA1, 0x4F), (0xF2, 0x8E, 0x2B), (0xB0, 0x7A, 0xA1)

# Appended to a copy of the page: moves the pointer onto a leader-change tick, as a person would,
# and leaves the tooltip's text where --dump-dom shows it.
HOVER = """<script>
var t = document.querySelector('.leader-change[data-offset="%d"]'), r = t.getBoundingClientRect();
t.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.x + 1, clientY: r.y + 1}));
var tip = document.getElementById('tip');
document.body.setAttribute('data-test-tip', tip.hidden ? '' : tip.textContent);
</script>"""


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=90, check=True)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    known = write_cluster(tmp / "node").known
    assert main(["report", str(tmp / "node"), "-o", str(tmp / "report.html")]) == 0
    return tmp, tmp / "report.html", known


def png_pixels(path: Path) -> tuple[int, int, list[list[bytes]]]:
    """A tiny PNG reader for 8-bit RGB/RGBA without interlace (what Chromium writes): rows of RGB pixels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color_type in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if color_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev = [], bytes(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [[row[i:i + 3] for i in range(0, stride, bpp)] for row in rows]


class Elements(HTMLParser):
    """Every element's tag and attributes, in document order."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))

    def having(self, **wanted) -> list[dict]:
        return [a for _, a in self.found if all(a.get(k.rstrip("_").replace("_", "-")) == v for k, v in wanted.items())]


def test_screenshot_shows_the_charts(page):
    tmp, html, _ = page
    shot = tmp / "report.png"
    chromium(tmp, f"--screenshot={shot}", "--window-size=1100,2400", html.as_uri())
    assert shot.stat().st_size > 20_000
    width, height, rows = png_pixels(shot)
    assert (width, height) == (1100, 2400)
    colors = Counter(pixel for row in rows[::2] for pixel in row[::2])
    white = colors[b"\xff\xff\xff"] / sum(colors.values())
    assert 0.3 < white < 0.97 and len(colors) > 50  # a page with drawing on it, not a blank one
    for rgb in (GREEN, ORANGE, PURPLE):  # broker lanes (active, fenced, shutdown), leader bands
        assert colors[bytes(rgb)] > 50, f"no #{bytes(rgb).hex()} area in the screenshot"


def test_rendered_dom_holds_every_chart_and_its_data(page):
    tmp, html, known = page
    dom = Elements(chromium(tmp, "--dump-dom", html.as_uri()).stdout)
    charts = {a["data-chart"] for tag, a in dom.found if tag == "svg"}
    assert charts == {"controller", "brokers", "health", "partitions", "isr", "topics", "changes", "features",
                      "composition"}
    under = [a for a in dom.having(data_health="under-replicated") if "data-most" in a]
    assert max(int(a["data-most"]) for a in under) == 4  # orders-0, orders-1, orders-2 and payments-0 at once
    assert [a["data-broker"] for a in dom.having(class_="lane") if "data-broker" in a] == ["1", "2", "3"]
    offset, ms = known["orders-0 leader 1->2"]
    tick = dom.having(data_offset=str(offset), data_partition="orders-0")
    assert len(tick) == 1 and tick[0]["data-time"] == utc(ms) == "2024-03-01T12:01:00.000Z"
    assert "leader 1 -> 2" in tick[0]["data-tip"] and f"offset {offset}" in tick[0]["data-tip"]
    fenced = dom.having(data_broker="3", data_state="fenced")
    assert [a["data-offset"] for a in fenced][-1] == str(known["broker 3 fenced"][0])
    assert dom.having(data_broker="2", data_state="shutdown")[0]["data-offset"] == str(known["broker 2 shutdown"][0])
    upgrade = dom.having(data_feature="metadata.version", data_offset=str(known["metadata.version 14"][0]))
    assert "3.3-IV3 -> 3.6-IV2" in upgrade[0]["data-tip"]
    assert dom.having(data_topic="payments", data_offset=str(known["payments deleted"][0]))
    assert dom.having(data_epoch="2", data_leader="2")[0]["data-offset"] == str(known["epoch 2"][0])
    cells = [a for a in dom.having(data_offsets=f"{known['orders-1 isr shrink'][0]}-{known['orders-1 isr shrink'][0]}")
             if "cell" in a["class"]]
    assert cells and "ISR shrinks 1" in cells[0]["data-tip"] and "under" in cells[0]["class"]
    assert dom.having(data_offset=str(known["secret config"][0]))  # the config table's row
    assert sum(int(a["data-records"]) for a in dom.having() if "data-records" in a) == 617


def test_hover_shows_offset_and_utc_time(page):
    tmp, html, known = page
    offset, ms = known["orders-0 leader 2->1"]
    probe = tmp / "hover.html"
    probe.write_text(html.read_text().replace("</body>", HOVER % offset + "</body>"))
    body = Elements(chromium(tmp, "--dump-dom", probe.as_uri()).stdout).having()
    tip = next(a["data-test-tip"] for a in body if "data-test-tip" in a)
    assert tip.startswith("orders-0: leader 2 -> 1") and f"offset {offset}, {utc(ms)}" in tip
