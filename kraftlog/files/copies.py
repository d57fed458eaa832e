"""Which copy of a cluster's log Raft would trust, and the log assembled from several copies.

Copies are ranked as Raft compares logs (``raft/.../OffsetAndEpoch.java``, ``compareTo``: the
epoch, then the offset): the leader epoch of the last batch, then the last offset. The best copy
supplies every offset it holds; another copy only offsets no better copy holds, and nothing from
the first offset where it differs from the best copy (an uncommitted tail a follower would
truncate). Copies that share no identical batch although they hold common offsets are not one
log (two clusters that share a cluster id): they are kept apart as separate lineages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kraftlog.files.coverage import Divergence, compare_copies, identical
from kraftlog.files.logdir import NodeDir
from kraftlog.files.paths import LogFile
from kraftlog.files.reader import Limits, Region, read_log_file
from kraftlog.files.records import Block, Entry, ReadProblems, iter_entries, iter_items

#: Past every offset: the open end of a copy read as it is.
NO_END = 1 << 62


def copy_order(last_epoch: int | None, last_offset: int | None, node_id: int | None, log_dir: str) -> tuple:
    """Sort key putting first the copy Raft would keep: highest last leader epoch, then highest last
    offset; ties by node id and log dir, so the order never depends on the order copies were found."""
    return (-(-1 if last_epoch is None else last_epoch), -(-1 if last_offset is None else last_offset),
            (1 << 31) if node_id is None else node_id, log_dir)


def minus(lo: int, hi: int, taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[lo, hi] without the (sorted, disjoint) intervals already taken (nothing when hi < lo)."""
    if hi < lo:
        return []
    out = []
    for a, b in taken:
        if b < lo or a > hi:
            continue
        if a > lo:
            out.append((lo, a - 1))
        lo = max(lo, b + 1)
        if lo > hi:
            return out
    out.append((lo, hi))
    return out


@dataclass(slots=True)
class Extent:
    """The offsets a copy's segments hold (contiguous runs) and its last batch."""

    runs: list[tuple[int, int]] = field(default_factory=list)  # of valid batches
    last_epoch: int | None = None  # of the last valid batch: Kafka truncates at an invalid one
    last_offset: int | None = None
    damaged: list[tuple[int, int]] = field(default_factory=list)  # offsets of batches failing their CRC


def _spans(path: Path, limits: Limits) -> list[tuple[int, int, int, bool]]:
    """(base offset, last offset, leader epoch, CRC valid) of each batch of one segment, headers only."""
    return [(b.base_offset, b.last_offset, b.partition_leader_epoch, b.is_valid)
            for b in read_log_file(path, limits, records=False) if not isinstance(b, Region)]


def extent(node: NodeDir, limits: Limits = Limits(), walked: dict[str, list] | None = None) -> Extent:
    """Walk the batch headers of every segment (records are not decoded). ``walked`` (segment name ->
    [(path, spans)]) lets a segment byte-identical to one already walked in another copy be taken
    from there."""
    walked = {} if walked is None else walked
    x = Extent()
    spans = []
    for seg in node.segments:
        known = walked.setdefault(seg.path.name, [])
        same = next((s for p, s in known if identical(p, seg.path)), None)
        if same is None:
            same = _spans(seg.path, limits)
            known.append((seg.path, same))
        spans += same
    x.damaged = [(lo, hi) for lo, hi, _, valid in spans if not valid]
    spans = [span for span in spans if span[3]]
    for _, hi, epoch, _ in spans:
        if x.last_offset is None or hi >= x.last_offset:
            x.last_offset, x.last_epoch = hi, epoch
    for lo, hi, _, _ in sorted(spans):
        if x.runs and lo <= x.runs[-1][1] + 1:
            x.runs[-1] = (x.runs[-1][0], max(hi, x.runs[-1][1]))
        else:
            x.runs.append((lo, hi))
    return x


@dataclass(frozen=True, slots=True)
class Piece:
    """Offsets ``lo``..``hi`` of the log, read from ``node``'s segments."""

    node: NodeDir
    lo: int
    hi: int


@dataclass(slots=True)
class Log:
    """One cluster's metadata log as the commands read it: one copy, or several assembled.

    ``copies`` best first; ``pieces`` in offset order; ``divergences`` of each other copy from the
    best one (``offset`` None: they agree where both hold data)."""

    cluster_id: str | None
    copies: list[NodeDir]
    pieces: list[Piece]
    snapshots: list[LogFile]
    divergences: list[Divergence] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for stderr: damage another copy made up for

    @classmethod
    def of(cls, node: NodeDir) -> Log:
        """One copy read as it is, without walking it first."""
        first = node.segments[0].offset if node.segments else None
        pieces = [] if first is None else [Piece(node, first, NO_END)]
        return cls(node.cluster_id, [node], pieces, list(node.snapshots))

    @property
    def node(self) -> NodeDir:
        """The best copy."""
        return self.copies[0]

    @property
    def first_offset(self) -> int | None:
        return self.pieces[0].lo if self.pieces else None

    def unreadable(self) -> list[str]:
        """One line per file or folder of its copies that could not be read, and why."""
        return [f"{path}: cannot read: {why}" for n in self.copies for path, why in n.unreadable]

    @property
    def name(self) -> str:
        if len(self.copies) == 1:
            return self.node.name
        return f"cluster {self.cluster_id} assembled from {len(self.copies)} copies"

    def describe(self) -> list[str]:
        """For stderr: which copies supplied which offsets, and where the copies diverge."""
        if len(self.copies) == 1:
            return []
        supplied: dict[str, list[str]] = {}
        for p in self.pieces:
            supplied.setdefault(p.node.name, []).append(f"{p.lo}-{p.hi}")
        lines = [f"cluster {self.cluster_id}: the log assembled from {len(self.copies)} copies, best first: "
                 + ", ".join(n.name for n in self.copies)]
        lines += [f"offsets {', '.join(spans)} from {who}" for who, spans in supplied.items()]
        for d in self.divergences:
            if d.offset is None:
                lines.append(f"{d.node} agrees with {d.reference} where both hold data")
            else:
                lines.append(f"{d.node} diverges from {d.reference} at offset {d.offset} ({d.detail}): "
                             f"nothing of it from offset {d.offset} on is read")
        return lines + self.notes

    def entries(self, start: int, limits: Limits, problems: ReadProblems,
                apply_invalid: bool = False, runs: str | None = None) -> Iterator[Entry | Block]:
        """Records from offset ``start`` on, noting a gap where offsets jump. A batch that fails
        its CRC ends the log there (Kafka truncates the log at it on recovery) unless
        ``apply_invalid``; ``problems.stopped_at`` says where. ``runs="blocks"``: clean walks come as
        ``Block`` columns (``records.iter_items``)."""
        if runs not in (None, "blocks"):
            raise ValueError(f"runs must be None or 'blocks', not {runs!r}")
        expected = start
        for piece in self.pieces:
            if piece.hi < start:
                continue
            hi = piece.hi
            for e in _node_entries(piece.node, max(start, piece.lo), hi, limits, problems, apply_invalid, runs):
                entry = type(e) is Entry
                first = e.offset if entry else int(e.offsets[0])
                if first > hi:
                    break
                if first > expected >= 0:
                    problems.messages.append(f"offsets {expected}-{first - 1} are missing from the log")
                if entry:
                    expected = first + 1
                    yield e
                    continue
                within = hi - first + 1  # offsets of a block are consecutive
                cut = len(e) > within
                e = e.part(0, within) if cut else e
                expected = e.last + 1
                yield e
                if cut:
                    break
            if problems.stopped_at is not None:
                return


def _node_entries(node: NodeDir, start: int, until: int, limits: Limits, problems: ReadProblems,
                  apply_invalid: bool, runs: str | None = None) -> Iterator[Entry | Block]:
    """A copy's records from ``start`` on. A segment whose successor is named at or below ``start``
    holds only earlier offsets (a segment's name is its base offset, as Kafka has it): not read."""
    segments = node.segments
    for i, seg in enumerate(segments):
        if i + 1 < len(segments) and segments[i + 1].offset <= start:
            continue
        if seg.offset > until:
            return
        read = iter_items if runs else iter_entries
        yield from read(seg, limits, problems, start=start, stop_at_invalid=not apply_invalid, until=until)
        if problems.stopped_at is not None:
            return


def _lineages(ranked: list[NodeDir], limits: Limits) -> list[list[tuple[NodeDir, Divergence | None]]]:
    """Copies in rank order grouped by whether they hold one log: a copy joins the first group whose
    best copy it shares an identical batch with (or no offset at all)."""
    groups: list[list[tuple[NodeDir, Divergence | None]]] = []
    for node in ranked:
        for g in groups:
            d = compare_copies(g[0][0], node, limits)
            if d.offset is None or d.agreed:
                g.append((node, d))
                break
        else:
            groups.append([(node, None)])
    return groups


def assemble(nodes: list[NodeDir], limits: Limits = Limits()) -> list[Log]:
    """The log of each lineage among ``nodes`` (copies of one cluster id), best lineage first."""
    if len(nodes) == 1:
        return [Log.of(nodes[0])]
    walked: dict[str, list] = {}
    extents = {id(n): extent(n, limits, walked) for n in nodes}
    ranked = sorted(nodes, key=lambda n: copy_order(extents[id(n)].last_epoch, extents[id(n)].last_offset,
                                                    n.node_id, str(n.log_dir)))
    logs = []
    for group in _lineages(ranked, limits):
        if len(group) == 1:
            logs.append(Log.of(group[0][0]))
            continue
        pieces, taken, notes = [], [], []
        # valid batches first; a batch failing its CRC only where no copy holds the offsets valid
        # (read there, it ends the log as Kafka's recovery would)
        for spans in ("runs", "damaged"):
            for node, d in group:
                limit = (d.offset if d is not None and d.offset is not None else NO_END) - 1
                for lo, hi in getattr(extents[id(node)], spans):
                    free = minus(lo, min(hi, limit), taken)
                    if spans == "damaged" and free != [(lo, min(hi, limit))]:
                        notes.append(f"{node.name}: the batch at offsets {lo}-{hi} fails its CRC; another copy "
                                     f"supplies what it holds of them")
                    for a, b in free:
                        pieces.append(Piece(node, a, b))
                        taken.append((a, b))
                        taken.sort()
        pieces.sort(key=lambda p: p.lo)
        snapshots: dict[tuple[int, int], LogFile] = {}
        for node, _ in group:
            for s in node.snapshots:
                snapshots.setdefault((s.offset, s.epoch), s)
        logs.append(Log(group[0][0].cluster_id, [n for n, _ in group], pieces,
                        [snapshots[k] for k in sorted(snapshots)], [d for _, d in group if d is not None], notes))
    return logs
