"""Replaying a real log up to a checkpoint's end offset gives that checkpoint's image, in every domain."""

import itertools

import pytest

from conftest import CORPUS, NO_CORPUS
from kraftlog.files.logdir import NodeDir, find_nodes
from kraftlog.files.paths import LogFile
from kraftlog.files.records import ReadProblems, iter_entries
from kraftlog.state.diff import diff
from kraftlog.state.image import ClusterImage
from kraftlog.state.replay import load_snapshot

REAL = CORPUS / "real"
NODES = find_nodes(REAL) if REAL.is_dir() else []


def _checkpoint(lf: LogFile, problems: ReadProblems) -> ClusterImage:
    return load_snapshot(iter_entries(lf, problems=problems), lf.offset, lf.epoch)


def _base(node: NodeDir) -> LogFile | None:
    """The earliest checkpoint the log continues from, when the log does not start at offset 0."""
    first = node.segments[0].offset
    return next((s for s in node.snapshots if s.offset >= first), None)


@pytest.mark.corpus
@pytest.mark.skipif(not NODES, reason=NO_CORPUS)
@pytest.mark.parametrize("node", NODES, ids=lambda n: str(n.metadata_dir.relative_to(REAL)))
def test_log_replay_equals_every_checkpoint_it_reaches(node: NodeDir):
    if not node.segments:
        pytest.skip("only checkpoints here, no log to replay")
    problems = ReadProblems()
    base = None
    if node.segments[0].offset > 0:
        base = _base(node)
        if base is None:
            pytest.skip(f"the log starts at offset {node.segments[0].offset} and no checkpoint leads into it")
    image = ClusterImage.empty() if base is None else _checkpoint(base, problems)
    start = 0 if base is None else base.offset
    targets = [s for s in node.snapshots if s.offset > start]
    if not targets:
        pytest.skip("no checkpoint after the point the log replays from")

    compared = []

    def compare_at(target: LogFile) -> None:
        expected = _checkpoint(target, problems)
        assert diff(expected, image) == [], f"log replay differs from {target.path.name}"
        compared.append(target.offset)

    expected_offset = start
    entries = itertools.chain.from_iterable(iter_entries(seg, problems=problems, start=start) for seg in node.segments)
    for entry in entries:
        if entry.offset != expected_offset:
            break  # a gap: checkpoints past it are out of reach
        while targets and targets[0].offset == entry.offset:
            compare_at(targets.pop(0))
        image.apply(entry.record, entry.offset, entry.timestamp, entry.epoch)
        expected_offset = entry.offset + 1
    while targets and targets[0].offset == expected_offset:
        compare_at(targets.pop(0))

    assert problems.messages == []
    assert image.problems == []
    if not compared:
        pytest.skip(f"the log ends at offset {expected_offset - 1}, before every checkpoint")
