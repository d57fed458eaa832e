"""Which offsets of a cluster's log can be replayed, and from what (reference §5, §6.3).

The log replays from offset 0, or from a snapshot that the log continues after (retention deletes
segments only once a snapshot covers them; the earliest such snapshot keeps the most history). A
gap in the log ends what is known until the next such snapshot, and a snapshot with no log around
it gives the state at its own last offset only. Log records before the first usable snapshot are
kept in ``records`` but change no state: nothing says what they applied to.
"""

from dataclasses import dataclass, field

SEED, GAP = "seed", "gap"


@dataclass(frozen=True, slots=True)
class Snapshot:
    end_offset: int  # exclusive: the snapshot stands for offsets < end_offset
    file_id: int
    timestamp: int | None  # the header's lastContainedLogTimestamp


@dataclass(frozen=True, slots=True)
class Reset:
    """From ``offset`` on, the state is the snapshot's (seed) or unknown (gap)."""

    offset: int
    kind: str
    snapshot: Snapshot | None = None


@dataclass(slots=True)
class Plan:
    ranges: list[tuple[int, int]] = field(default_factory=list)  # log offsets replayed, inclusive
    resets: list[Reset] = field(default_factory=list)
    unreplayable: list[tuple[int, int]] = field(default_factory=list)

    @property
    def seeds(self) -> list[Snapshot]:
        return [r.snapshot for r in self.resets if r.kind == SEED]


def plan(coverage: list[tuple[int, int]], snapshots: list[Snapshot]) -> Plan:
    """The plan for one cluster from its log's covered offsets (sorted, disjoint) and its clean
    snapshots (one per end offset)."""
    p = Plan()
    snaps = sorted(snapshots, key=lambda s: s.end_offset)

    def attached(s: Snapshot) -> bool:
        return any(a <= s.end_offset <= b + 1 for a, b in coverage)

    items = [(a, 1, (a, b)) for a, b in coverage] + [(s.end_offset - 1, 0, s) for s in snaps if not attached(s)]
    known: int | None = None  # the last offset whose state replay knows, while it knows one
    for _, is_log, item in sorted(items, key=lambda x: (x[0], x[1])):
        if not is_log:  # a snapshot alone: its state at its last offset, nothing after
            if known is not None:
                p.resets.append(Reset(known + 1, GAP))
            p.resets += [Reset(item.end_offset - 1, SEED, item), Reset(item.end_offset, GAP)]
            known = None
            continue
        a, b = item
        if (a == 0 and known is None) or (known is not None and a == known + 1):
            p.ranges.append((a, b))
            known = b
            continue
        if known is not None:
            p.resets.append(Reset(known + 1, GAP))
        seed = next((s for s in snaps if a <= s.end_offset <= b + 1), None)
        if seed is None:
            p.unreplayable.append((a, b))
            known = None
            continue
        p.resets.append(Reset(seed.end_offset - 1, SEED, seed))
        if a < seed.end_offset:
            p.unreplayable.append((a, seed.end_offset - 1))
        if seed.end_offset <= b:
            p.ranges.append((seed.end_offset, b))
        known = b
    return p
