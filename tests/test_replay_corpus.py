"""Three roads to the same state on real data: a checkpoint, the log replayed to it from offset 0
or from an earlier checkpoint, and Kafka's own decoding of the checkpoint's records."""

import base64
from pathlib import Path

import pytest

from conftest import CORPUS, GOLDEN, read_golden
from kraftlog.files.logdir import NodeDir, find_nodes, scan_file
from kraftlog.files.records import Entry
from kraftlog.state.rebuild import load_checkpoint, rebuild
from kraftlog.state.replay import load_snapshot


def _cases() -> list[tuple[NodeDir, object, str]]:
    """(node, checkpoint, base) for every checkpoint the node's log reaches."""
    if not CORPUS.is_dir():
        return []
    cases = []
    for node in find_nodes(CORPUS / "real"):
        first = node.segments[0].offset if node.segments else None
        last = scan_file(node.segments[-1]).last_offset if node.segments else -1
        for i, snap in enumerate(node.snapshots):
            if snap.offset - 1 > last:
                continue  # the log on disk ends before this checkpoint
            if first == 0:
                cases.append((node, snap, "none"))
            earlier = [s for s in node.snapshots[:i] if s.offset >= (first if first is not None else 1 << 62)]
            if earlier:
                cases.append((node, snap, str(earlier[-1].path)))
    return cases


CASES = _cases()


def _without_provenance(image) -> dict:
    out = image.to_json(redact=False)
    del out["provenance"]
    return out


class _GoldenRecord:
    """A golden line's record in the shape replay consumes (bytes fields are base64 there)."""

    def __init__(self, line: dict) -> None:
        kind = "metadata" if "metadata" in line else "control"
        self.type = line[kind]["type"]
        self.data = line[kind]["data"]
        self.error = None
        if self.type == "USER_SCRAM_CREDENTIAL_RECORD":
            self.data = {k: base64.b64decode(v) if k in ("salt", "storedKey", "serverKey") else v
                         for k, v in self.data.items()}


@pytest.mark.skipif(not CASES, reason="the shared corpus (../shared/corpus) is absent")
@pytest.mark.parametrize("node,snap,base", CASES,
                         ids=[f"{n.log_dir.parent.name}/{n.log_dir.name}:{s.path.name}<-{b.rsplit('/', 1)[-1]}"
                              for n, s, b in CASES])
def test_log_replayed_to_a_checkpoint_equals_the_checkpoint(node, snap, base):
    expected = load_checkpoint(snap)
    assert not expected.problems
    built = rebuild(node, offset=snap.offset - 1, base=base if base == "none" else Path(base))
    assert built.image.provenance.offset == snap.offset - 1, "the log does not reach the checkpoint"
    assert not built.problems.messages and not built.image.problems
    assert _without_provenance(built.image) == _without_provenance(expected)
    golden = GOLDEN / snap.path.relative_to(CORPUS).with_name(snap.path.name + ".jsonl.gz")
    if golden.exists():
        lines = [x for x in read_golden(golden) if x["kind"] == "record"]
        image = load_snapshot((Entry(_GoldenRecord(x), x["offset"], x["timestamp"], 0) for x in lines),
                              snap.offset, snap.epoch)
        assert _without_provenance(image) == _without_provenance(expected)


def test_enough_checkpoints_are_compared():
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus (../shared/corpus) is absent")
    assert len(CASES) >= 10
