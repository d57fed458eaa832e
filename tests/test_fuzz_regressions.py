"""What ``scripts/fuzz.py`` found, each as a small constructed input (no corpus bytes).

Every test names the fuzz target and finding it reproduces; the fix is in the module it exercises.
"""

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from kraftlog.cli.main import main
from kraftlog.schema import decode_metadata, encode_metadata
from kraftlog.state.image import ClusterImage, Provenance
from kraftlog.state.tree import provenance_text, render_tree
from kraftlog.wire.batch import Record, encode_batch

NOOP = encode_metadata("NO_OP_RECORD", 0, {})


def _batch(values: list[bytes], *, base_offset: int = 0, timestamp: int = 1_700_000_000_000, **kw) -> bytes:
    recs = [Record(0, 0, None, v, (), 0, 0, i) for i, v in enumerate(values)]
    return encode_batch(recs, base_offset=base_offset, base_timestamp=timestamp, partition_leader_epoch=1, **kw)


def _segment(tmp_path: Path, data: bytes) -> Path:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir(exist_ok=True)
    p = d / "00000000000000000000.log"
    p.write_bytes(data)
    return p


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        status = main(list(argv))
    return status, out.getvalue()


# --- cli target: a CRC-valid batch whose timestamp is past year 9999 -------------------------------


def test_dump_stats_and_inspect_survive_a_timestamp_past_year_9999(tmp_path):
    """Found: ValueError "year 289995635 is out of range" in ``render.iso_time`` (dump --stats, inspect)."""
    far = 9_151_314_442_816_847_871  # a maxTimestamp of 0x7F00... bytes
    path = _segment(tmp_path, _batch([NOOP], timestamp=far))
    for argv in (["dump", "--stats", str(path)], ["inspect", str(tmp_path)],
                 ["inspect", "--format", "json", str(tmp_path)]):
        status, out = _cli(*argv)
        assert status in (0, 1), argv
        assert f"{far} ms" in out, argv


# --- replay target: a record whose batch timestamp is out of Python's date range ------------------


def test_tree_prints_a_provenance_time_out_of_date_range():
    """Found: OverflowError in ``tree.provenance_text`` for a record time near 2**63 ms."""
    for ms in (2**63 - 1, -(2**63), 253_402_300_800_000):
        assert provenance_text(Provenance(7, 1, ms)).endswith(f"time {ms} ms since the epoch")
    assert provenance_text(Provenance(7, 1, -1)).endswith("time 1969-12-31T23:59:59.999Z[UTC]")
    image = ClusterImage.empty()
    image.apply(decode_metadata(NOOP), 7, 2**63 - 1, 1)
    assert "ms since the epoch" in render_tree(image)
    json.dumps(image.to_json())
