"""Every file real Kafka brokers wrote decodes cleanly, and every metadata file re-encodes byte-exactly."""

import pytest

from conftest import corpus_log_files
from kraftlog.files.reader import Region, read_log_file
from kraftlog.schema import decode_control, decode_metadata, encode_record
from kraftlog.wire.batch import reencode_batch

FILES = corpus_log_files()
METADATA = corpus_log_files(metadata_only=True)


@pytest.mark.skipif(not FILES, reason="the shared corpus (../shared/corpus) is absent")
def test_every_real_file_decodes_without_error():
    batches = records = 0
    for path in FILES:
        for item in read_log_file(path):
            assert not isinstance(item, Region), f"{path}: {item}"
            assert item.is_valid and item.error is None, f"{path} at {item.position}"
            batches += 1
            records += len(item.records)
    assert len(FILES) > 150 and records > 300_000  # the whole corpus was read, not a stray subset


@pytest.mark.skipif(not METADATA, reason="the shared corpus (../shared/corpus) is absent")
@pytest.mark.parametrize("path", METADATA, ids=lambda p: "/".join(p.parts[-4:]))
def test_real_metadata_file_round_trips_byte_identically(path):
    data = path.read_bytes()
    pos = 0
    for batch in read_log_file(path):
        blob = data[pos : pos + batch.size]
        assert reencode_batch(batch) == blob, f"batch at {pos}"
        for r in batch.records:
            if batch.is_control:
                assert decode_control(r.key, r.value).error is None
            else:
                rec = decode_metadata(r.value)
                assert rec.error is None and not rec.unknown_tags
                assert encode_record(rec) == r.value, f"offset {r.offset}"
        pos += batch.size
    assert pos == len(data)
