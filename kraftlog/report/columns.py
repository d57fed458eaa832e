"""The PartitionChangeRecords the report takes as columns, and what it reads of each.

A quiet log's churn is ISR shrinks and expands and leader moves: PartitionChangeRecords that hold
only their partition's keys, ``isr`` and ``leader`` (and, now and then, fields the report does not read,
``PASSED``, and a reassignment's ``replicas``, ``COUNTED``, which the fold hands to ``merge_partition`` as they
come). Those the report folds a run at a time with
numpy (``collect._Walker.add_records``); any other record, and any of these it was not built for
(a version the schema does not declare, one read as an older version, an unknown tagged field,
another field set), goes the object way. What each taken field does to the partition comes from
``state.topics.PARTITION_CHANGE_RECORD`` and the schema (``schema.metadata``): ``BUILT`` is False,
and nothing is taken, when either declares these fields otherwise than the fold assumes
(``tests/test_report_columns.py``).
"""

from __future__ import annotations

from typing import Any

from kraftlog.schema import MetadataRecord
from kraftlog.schema.metadata import BY_TYPE_NAME
from kraftlog.state.topics import (
    ALWAYS_BUMPS,
    KEY,
    NO_LEADER_CHANGE,
    PARTITION_CHANGE_RECORD,
    PLACEMENT,
    REPLACE,
    SENTINEL,
    Merge,
)

CHANGE = "PARTITION_CHANGE_RECORD"
_MESSAGE = BY_TYPE_NAME[CHANGE]
_VERSIONS = frozenset(_MESSAGE.valid_versions)  # (a set: ``in`` without a Python call)
_API_KEY = _MESSAGE.api_key
#: The fields the fold reads, with the merge it applies: the key, the ISR replaced when set, the
#: leader replaced unless -2 (bumping the leader epoch); every record bumps the partition epoch.
TAKEN: dict[str, Merge] = {
    "partitionId": Merge(KEY),
    "topicId": Merge(KEY),
    "isr": Merge(REPLACE, "isr"),
    "leader": Merge(SENTINEL, "leader", NO_LEADER_CHANGE, bumps="leaderEpoch"),
}
LEADER_EPOCH, PARTITION_EPOCH = "leaderEpoch", "partitionEpoch"
#: The partition's state the fold holds as columns (what the report reads of a partition).
READ = frozenset({"leader", "isr", "replicas", "eligibleLeaderReplicas", LEADER_EPOCH, PARTITION_EPOCH})
#: The fields the fold passes to ``merge_partition`` as they come (at most a few records a stretch), whose
#: states it writes back: those of ``PARTITION_CHANGE_RECORD`` that neither move nor bump a state the
#: report reads (directories, leaderRecoveryState, adding/removing replicas, lastKnownElr).
PASSED = frozenset(name for name, m in PARTITION_CHANGE_RECORD.items()
                   if m.rule != KEY and name not in TAKEN and m.state not in READ and m.bumps is None)
#: The field the fold reads the length of (the partition's replica count: its track's, and whether it is
#: under-replicated), handed to ``merge_partition`` with the ``PASSED`` fields as it comes: a reassignment's replicas
#: replace the old ones and bump no epoch but the partition's (``PartitionRegistration.merge``), and their placement
#: is checked against the directories there (``state.topics.placement``), so a change the merge refuses ends a stretch.
COUNTED = "replicas"
_MERGED = PASSED | {COUNTED}  # the fields a change hands to ``merge_partition``
#: The states ``merge_partition`` of the ``PASSED`` and ``COUNTED`` fields alone may set.
PASSED_STATES = frozenset(PARTITION_CHANGE_RECORD[name].state for name in _MERGED)
_TAKEN_NAMES, _KNOWN_NAMES = frozenset(TAKEN), frozenset(TAKEN) | _MERGED  # (``change_of``: no set made per record)


def built() -> bool:
    """Whether the declarations still say what the fold does: each taken field merges as ``TAKEN``
    says, each other field is a tagged one whose absence leaves the partition as it is (so a record
    without it changes nothing else), and every record bumps the partition epoch."""
    fields = {f.json: f for f in _MESSAGE.fields}
    for name, merge in PARTITION_CHANGE_RECORD.items():
        field = fields.get(name)
        if field is None:
            return False
        if name in TAKEN:
            if merge != TAKEN[name] or (merge.rule != KEY and (field.tag is None or field.default != merge.unchanged)):
                return False
        elif field.tag is None or (name == COUNTED and (merge != Merge(PLACEMENT, COUNTED) or field.default is not None)):
            return False
    return fields.keys() == PARTITION_CHANGE_RECORD.keys() and ALWAYS_BUMPS == PARTITION_EPOCH


BUILT = built()


def change_of(rec: Any) -> tuple[tuple[str, int], int, tuple[int, ...] | None, dict | None] | None:
    """((topic id, partition), leader (-2: unchanged), ISR (None: unchanged), its ``PASSED`` and ``COUNTED`` fields
    (None: none)) of a PartitionChangeRecord the fold takes; None for any other record."""
    if (type(rec) is not MetadataRecord or rec.api_key != _API_KEY or rec.error is not None
            or rec.decoded_as is not None or rec.unknown_tags or rec.version not in _VERSIONS or not BUILT):
        return None
    data = rec.data
    passed = None
    if not data.keys() <= _TAKEN_NAMES:
        if not data.keys() <= _KNOWN_NAMES:
            return None
        passed = {name: value for name, value in data.items() if name in _MERGED}
    isr = data.get("isr")
    return (data["topicId"], data["partitionId"]), data.get("leader", NO_LEADER_CHANGE), \
        None if isr is None else tuple(isr), passed
