"""The garbage collector's thresholds, raised while kraftlog holds many long-lived objects: decoded
records shared across reads, an image, a task's columns. None of them is in a cycle (reference counting
frees them), yet every cyclic collection visits all of them, so CPython's default thresholds make a
read, a replay or a Spark task pay for collections that find nothing.

One rule for every holder: each asks for thresholds at least as high as its own; while any is under way
the thresholds are the highest asked for (never below the ones found); when the last ends, the ones found
are put back. Holders may end in any order, or never (readers are generators); thresholds someone else
set meanwhile are left as they are."""

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Reading files: the middle and full generations a hundred times rarer than CPython's default (10, 10).
READING = (0, 1000, 1000)
#: Replaying a log: full collections a hundred times rarer.
REPLAYING = (0, 0, 1000)

_holders: list[tuple[int, int, int]] = []
_found: tuple[int, int, int] = gc.get_threshold()
_set: tuple[int, int, int] | None = None


@contextmanager
def rare_collections(at_least: tuple[int, int, int]) -> Iterator[None]:
    """Thresholds at least ``at_least`` (young, middle, old) while the block runs."""
    global _found
    if not _holders or gc.get_threshold() != _set:
        _found = gc.get_threshold()
    _holders.append(at_least)
    _apply()
    try:
        yield
    finally:
        _holders.remove(at_least)
        if gc.get_threshold() == _set:
            _apply()


def _apply() -> None:
    global _set
    _set = tuple(max([found, *(h[i] for h in _holders)]) for i, found in enumerate(_found)) if _holders else None
    gc.set_threshold(*(_set or _found))
