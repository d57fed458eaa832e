"""The file reader: every byte in a batch or a reported region, whatever the file holds."""

import gc
import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.files import reader
from kraftlog.files.reader import Limits, Region, read_log_stream
from kraftlog.wire.batch import Batch, Record, encode_batch


def _batch(base_offset: int, n: int = 2, value: bytes = b"value") -> bytes:
    recs = [Record(0, 0, None, value + bytes([i]), (), 0, 0, i) for i in range(n)]
    return encode_batch(recs, base_offset=base_offset, base_timestamp=1_700_000_000_000, partition_leader_epoch=1)


def _segment(count: int = 5) -> bytes:
    return b"".join(_batch(i * 2) for i in range(count))


def walk(data: bytes, limits: Limits = Limits()) -> list[Batch | Region]:
    items = list(read_log_stream(io.BytesIO(data), len(data), limits))
    # the accounting invariant holds for every input
    assert sum(i.size if isinstance(i, Batch) else i.length for i in items) == len(data)
    return items


def _regions(items):
    return [(i.position, i.length, i.reason) for i in items if isinstance(i, Region)]


def test_clean_segment():
    items = walk(_segment())
    assert [i.base_offset for i in items] == [0, 2, 4, 6, 8]
    assert all(i.is_valid and i.error is None for i in items)


def test_empty_file():
    assert walk(b"") == []


def test_truncated_tail_is_reported_as_trailing_bytes():
    data = _segment()
    size = len(_batch(0))
    for cut in (1, 16, 17, 60, 61, size - 1):
        items = walk(data[: 4 * size + cut])
        assert len([i for i in items if isinstance(i, Batch)]) == 4
        assert _regions(items) == [(4 * size, cut, "truncated")]


def test_crc_mismatch_reports_invalid_batch_and_keeps_records():
    data = bytearray(_segment())
    size = len(_batch(0))
    data[2 * size + 70] ^= 0x01  # inside batch 2's first record value
    items = walk(bytes(data))
    assert [i.is_valid for i in items] == [True, True, False, True, True]
    assert len(items[2].records) == 2


def test_corrupt_length_field_resyncs_on_next_batch():
    data = bytearray(_segment())
    size = len(_batch(0))
    struct.pack_into(">i", data, size + 8, 0x7FFFFFF0)  # batch 1 claims ~2 GiB
    items = walk(bytes(data))
    assert _regions(items) == [(size, size, "corrupt")]
    assert [i.base_offset for i in items if isinstance(i, Batch)] == [0, 4, 6, 8]


def test_plausible_but_wrong_length_does_not_swallow_later_batches():
    data = bytearray(_segment())
    size = len(_batch(0))
    struct.pack_into(">i", data, size + 8, size * 2)  # in range, within the file, but wrong
    items = walk(bytes(data))
    assert [i.base_offset for i in items if isinstance(i, Batch)] == [0, 4, 6, 8]
    assert _regions(items) == [(size, size, "corrupt")]


def test_length_past_eof_with_valid_batches_after_is_corrupt_not_truncated():
    data = bytearray(_segment())
    size = len(_batch(0))
    struct.pack_into(">i", data, 8, len(data))  # batch 0 claims more than the file
    items = walk(bytes(data))
    assert _regions(items) == [(0, size, "corrupt")]
    assert len([i for i in items if isinstance(i, Batch)]) == 4


def test_garbage_between_batches_is_skipped_and_reported():
    good = _segment(2)
    data = good[: len(good) // 2] + b"\xde\xad\xbe\xef" * 20 + good[len(good) // 2:]
    items = walk(data)
    assert _regions(items) == [(len(good) // 2, 80, "corrupt")]
    assert len([i for i in items if isinstance(i, Batch)]) == 2


def test_not_a_segment_at_all():
    text = b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n" * 3
    assert _regions(walk(text)) == [(0, len(text), "corrupt")]


def test_magic_0_and_1_message_sets_are_recognised_not_decoded():
    v0 = struct.pack(">qiIbbi", 0, 14 + 3, 0, 0, 0, -1) + struct.pack(">i", 3) + b"abc"
    v1 = struct.pack(">qiIbbqi", 1, 22 + 3, 0, 1, 0, 123, -1) + struct.pack(">i", 3) + b"xyz"
    items = walk(v0 + v1 + _batch(2))
    assert _regions(items) == [(0, len(v0), "legacy-magic"), (len(v0), len(v1), "legacy-magic")]
    assert items[2].base_offset == 2


def test_batch_above_max_size_is_corrupt():
    big = _batch(0, n=1, value=b"x" * 5000)
    items = walk(big + _batch(1), Limits(max_batch_bytes=4096))
    assert _regions(items) == [(0, len(big), "corrupt")]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_mutation_is_accounted_for_and_never_raises(data):
    blob = bytearray(_segment(4))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "length"]))
        pos = data.draw(st.integers(0, max(len(blob) - 1, 0)))
        if kind == "flip" and blob:
            blob[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "cut":
            del blob[pos: pos + data.draw(st.integers(1, 80))]
        elif kind == "insert":
            blob[pos:pos] = data.draw(st.binary(min_size=1, max_size=80))
        elif len(blob) >= pos + 12:
            struct.pack_into(">i", blob, pos + 8 - pos % 4, data.draw(st.integers(-(2**31), 2**31 - 1)))
    walk(bytes(blob))


# --- runs of repeated batches (``reader._repeats``) -------------------------------------------------

_NOOP = b"\x01\x14\x00\x00"


def _noop(offset: int, ts: int, value: bytes = _NOOP, attributes: int = 0) -> bytes:
    return encode_batch([Record(0, 0, None, value)], base_offset=offset, base_timestamp=ts, max_timestamp=ts + 7,
                        partition_leader_epoch=offset % 3, attributes=attributes)


def _items(data: bytes, **kw) -> list:
    """What the reader yields, each batch as its fields (Batch has no equality of its own)."""
    return [(b.position, b.header, b.crc_valid, b.error, b.records) if isinstance(b, Batch) else b
            for b in read_log_stream(io.BytesIO(data), len(data), Limits(), **kw)]


def _one_by_one(data: bytes, **kw) -> list:
    """What the reader yields with runs turned off: every batch read by ``decode_batch_at``."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reader, "_RUN_AFTER", 1 << 30)
        return _items(data, **kw)


def test_a_run_of_noops_is_read_as_one_and_as_the_batches_one_by_one(monkeypatch):
    data = b"".join(_noop(i, 1_700_000_000_000 + 37 * i) for i in range(3000))
    used = []
    real = reader._repeats
    monkeypatch.setattr(reader, "_repeats", lambda *a: used.append((r := real(*a))[0]) or r)
    for kw in ({}, {"records": False}, {"skip_before": 1500}):
        used.clear()
        assert _items(data, **kw) == _one_by_one(data, **kw)
        assert sum(used) > 2900  # the runs did read them

@settings(max_examples=200, deadline=None)
@given(st.data())
def test_runs_read_what_the_batches_read_one_by_one(data):
    """Runs broken by other values, LogAppendTime, flipped bits (CRCs), cut files and window ends."""
    parts = []
    for i in range(data.draw(st.integers(0, 120))):
        kind = data.draw(st.sampled_from(["noop"] * 6 + ["other", "append"]))
        value = _NOOP if kind != "other" else b"\x01\x14\x00\x00" + bytes([i % 2])
        parts.append(_noop(i, 1_700_000_000_000 + data.draw(st.integers(0, 1 << 20)), value,
                           8 if kind == "append" else 0))
    blob = bytearray(b"".join(parts))
    for _ in range(data.draw(st.integers(0, 3))):
        if blob:
            blob[data.draw(st.integers(0, len(blob) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    if blob and data.draw(st.booleans()):
        del blob[data.draw(st.integers(0, len(blob) - 1)):]
    kw = data.draw(st.sampled_from([{}, {"records": False}, {"skip_before": 40}]))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reader, "_WINDOW", data.draw(st.sampled_from([1 << 20, 997, 4096])))
        assert _items(bytes(blob), **kw) == _one_by_one(bytes(blob), **kw)


def test_older_collections_are_rarer_only_while_files_are_read_in_any_order():
    """Readers raise the second and third thresholds while any of them is under way and put back what they found
    when the last ends, however they end (exhausted, closed early, interleaved); thresholds someone else
    set meanwhile are theirs to put back."""
    before = gc.get_threshold()
    blob = _segment(3)
    seen = [gc.get_threshold() for _ in read_log_stream(io.BytesIO(blob), len(blob))]
    assert seen == [(before[0], before[1] * 100, before[2] * 100)] * 3 and gc.get_threshold() == before
    a = read_log_stream(io.BytesIO(blob), len(blob))
    b = read_log_stream(io.BytesIO(blob), len(blob))
    next(a), next(b)
    a.close()
    assert gc.get_threshold()[2] == before[2] * 100  # b is still reading
    list(b)
    assert gc.get_threshold() == before
    c = read_log_stream(io.BytesIO(blob), len(blob))
    next(c)
    gc.set_threshold(before[0], before[1], 7)  # someone else's
    try:
        c.close()
        assert gc.get_threshold() == (before[0], before[1], 7)
    finally:
        gc.set_threshold(*before)


def test_a_batch_below_offset_minus_one_keeps_its_records():
    """baseOffset is outside the CRC, so a damaged one can be any int64: the batch's records are still
    read (the columnar walk reads them too), never dropped with no error."""
    items = walk(_batch(-10, n=3))
    assert [b.base_offset for b in items] == [-10]
    assert [r.value for r in items[0].records] == [b"value\x00", b"value\x01", b"value\x02"]
    assert items[0].error is None
