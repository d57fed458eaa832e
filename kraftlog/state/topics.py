"""Topics and partitions (``TopicsImage``), with ``PartitionRegistration.merge`` semantics.

``PARTITION_RECORD`` and ``PARTITION_CHANGE_RECORD`` declare, field by field, what each record does to a
partition; ``new_partition`` and ``merge_partition`` read them, and so does the Spark job's column
fold (``spark/partition_fold.py``), which refuses what they name and it was not built for. A field
the schema declares and these tables do not name fails ``tests/test_state_partition_change.py``.
"""

import linecache
from collections.abc import Callable
from typing import Any, NamedTuple

from kraftlog.schema.metadata import BY_TYPE_NAME
from kraftlog.schema.records import MetadataRecord
from kraftlog.state.ids import MIGRATING, sorted_map
from kraftlog.state.problems import REFUSALS, ReplayProblem

#: PartitionChangeRecord.Leader default: the leader (and so the leader epoch) stays as it is.
NO_LEADER_CHANGE = -2
#: PartitionChangeRecord.LeaderRecoveryState default: unchanged.
NO_RECOVERY_STATE_CHANGE = -1
#: LeaderRecoveryState values.
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}

#: How a field merges. KEY: names the partition. REPLACE: a list that replaces the old one when not
#: null. SENTINEL: replaces the old value unless it is ``unchanged``. PLACEMENT: replicas and
#: directories, merged together by ``placement``.
KEY, REPLACE, SENTINEL, PLACEMENT = "key", "replace", "sentinel", "placement"
#: A PartitionRecord field that must be there (and not null): without it the record is refused.
REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()


class Merge(NamedTuple):
    """What one PartitionChangeRecord field does to the partition's ``state`` field."""

    rule: str
    state: str | None = None
    unchanged: Any = None  # the value that leaves the state as it is (null for lists)
    bumps: str | None = None  # the epoch one more when the field is not ``unchanged``


class Init(NamedTuple):
    """What one PartitionRecord field sets: ``absent`` and ``null`` are the values taken when the
    field is left out or null (``REQUIRED``: the record is refused)."""

    rule: str
    state: str | None = None
    absent: Any = REQUIRED
    null: Any = REQUIRED


#: ``PartitionRegistration.merge`` (apache/kafka 4.2.0-rc1 metadata/.../PartitionRegistration.java
#: line 238), by PartitionChangeRecord field in Kafka's JSON names. Every record also bumps
#: ``ALWAYS_BUMPS``.
PARTITION_CHANGE_RECORD: dict[str, Merge] = {
    "partitionId": Merge(KEY),
    "topicId": Merge(KEY),
    "isr": Merge(REPLACE, "isr"),
    "leader": Merge(SENTINEL, "leader", NO_LEADER_CHANGE, bumps="leaderEpoch"),
    "replicas": Merge(PLACEMENT, "replicas"),
    "removingReplicas": Merge(REPLACE, "removingReplicas"),
    "addingReplicas": Merge(REPLACE, "addingReplicas"),
    "leaderRecoveryState": Merge(SENTINEL, "leaderRecoveryState", NO_RECOVERY_STATE_CHANGE),
    "directories": Merge(PLACEMENT, "directories"),
    "eligibleLeaderReplicas": Merge(REPLACE, "eligibleLeaderReplicas"),
    "lastKnownElr": Merge(REPLACE, "lastKnownElr"),
}
ALWAYS_BUMPS = "partitionEpoch"

#: ``new PartitionRegistration(PartitionRecord)`` (PartitionRegistration.java line 202), in the
#: order of the partition's state.
PARTITION_RECORD: dict[str, Init] = {
    "partitionId": Init(KEY),
    "topicId": Init(KEY),
    "replicas": Init(PLACEMENT, "replicas"),
    "isr": Init(REPLACE, "isr"),
    "removingReplicas": Init(REPLACE, "removingReplicas", absent=()),
    "addingReplicas": Init(REPLACE, "addingReplicas", absent=()),
    "leader": Init(SENTINEL, "leader"),
    "leaderRecoveryState": Init(SENTINEL, "leaderRecoveryState", absent=0),
    "leaderEpoch": Init(SENTINEL, "leaderEpoch"),
    "partitionEpoch": Init(SENTINEL, "partitionEpoch"),
    "directories": Init(PLACEMENT, "directories", absent=None, null=None),
    "eligibleLeaderReplicas": Init(REPLACE, "eligibleLeaderReplicas", absent=(), null=()),
    "lastKnownElr": Init(REPLACE, "lastKnownElr", absent=(), null=()),
}


def _directories(directories: list[str] | None, replicas: list[int]) -> list[str]:
    """``defaultToMigrating``: null, empty or all-MIGRATING directories are MIGRATING for every
    replica (pre-JBOD metadata); otherwise one per replica (the registration's constructor)."""
    if directories is None or directories.count(MIGRATING) == len(directories):
        return [MIGRATING] * len(replicas)
    if len(directories) != len(replicas):
        raise ReplayProblem(f"{len(directories)} directories for {len(replicas)} replicas")
    return list(directories)


def _recovery_state(value: int) -> int:
    if value not in LEADER_RECOVERY_STATES:
        raise ReplayProblem(f"unknown leaderRecoveryState {value}")
    return value


def _initial(data: dict, name: str, init: Init) -> Any:
    value = data.get(name, init.absent)
    if value is None:
        value = init.null
    if value is REQUIRED:
        raise ReplayProblem(f"PartitionRecord without {name}" if name not in data else f"PartitionRecord {name} is null")
    return list(value) if init.rule == REPLACE else value


def new_partition(data: dict) -> dict:
    """A PartitionRecord's state: it replaces whatever the partition had."""
    state = {init.state: _initial(data, name, init) for name, init in PARTITION_RECORD.items() if init.rule != KEY}
    state["replicas"] = list(state["replicas"])
    state["directories"] = _directories(state["directories"], state["replicas"])
    state["leaderRecoveryState"] = _recovery_state(state["leaderRecoveryState"])
    return state


def placement(old: dict, change: dict) -> tuple[list[int], list[str]]:
    """Replicas and directories after a PartitionChangeRecord, as Kafka merges them: null directories
    keep the old ones in place (so all-MIGRATING stays MIGRATING for every replica, and a change of
    the replica count without directories is refused), and new directories must fit new replicas
    (``checkDirectories``)."""
    replicas = change.get("replicas")
    directories = change.get("directories")
    if directories is None:
        directories = old["directories"]
    elif replicas is not None and directories and len(directories) != len(replicas):
        raise ReplayProblem(f"{len(directories)} directories for {len(replicas)} replicas")
    replicas = old["replicas"] if replicas is None else list(replicas)
    return replicas, _directories(directories, replicas)


#: ``PARTITION_CHANGE_RECORD`` by field, as ``merge_partition`` reads it: the REPLACE fields' state fields (a
#: list that is not null replaces the old one); the SENTINEL fields' (state field, unchanged, bumps,
#: leaderRecoveryState?); the KEY and PLACEMENT fields, passed over in the loop.
_REPLACED = {name: m.state for name, m in PARTITION_CHANGE_RECORD.items() if m.rule == REPLACE}
_SENTINELS = {name: (m.state, m.unchanged, m.bumps, m.state == "leaderRecoveryState")
              for name, m in PARTITION_CHANGE_RECORD.items() if m.rule == SENTINEL}
_PASSED = frozenset(name for name, m in PARTITION_CHANGE_RECORD.items() if m.rule in (KEY, PLACEMENT))
assert all(m.unchanged is None and m.bumps is None for m in PARTITION_CHANGE_RECORD.values() if m.rule == REPLACE)
assert {*_REPLACED, *_SENTINELS, *_PASSED} == set(PARTITION_CHANGE_RECORD)


def merge_partition(old: dict, change: dict) -> dict:
    """The partition after a PartitionChangeRecord (reference §6.2), by ``PARTITION_CHANGE_RECORD``;
    ``old`` is left untouched (the lists it shares with the result are never changed in place).

    A Leader field other than -2 bumps the leader epoch, even when it is -1 or names the current
    leader, because the controller writes the current leader on purpose to fence stale replicas.
    Only the fields the change holds are visited (a decoded PartitionChangeRecord holds its tagged
    fields only when set); without replicas and directories the placement stays as it is, since
    ``old``'s already has one directory per replica. A field the table does not name is refused."""
    new = old.copy()
    if "replicas" in change or "directories" in change:
        new["replicas"], new["directories"] = placement(old, change)
    for name, value in change.items():
        state = _REPLACED.get(name)
        if state is not None:
            if value is not None:
                new[state] = list(value)
            continue
        if name in _PASSED:
            continue
        if name not in _SENTINELS:
            raise ReplayProblem(f"PartitionChangeRecord field {name} is not one kraftlog merges")
        state, unchanged, bumps, recovery = _SENTINELS[name]
        if value == unchanged:
            continue
        new[state] = _recovery_state(value) if recovery else value
        if bumps is not None:
            new[bumps] = old[bumps] + 1
    new[ALWAYS_BUMPS] = old[ALWAYS_BUMPS] + 1
    return new


def shaped_change(shape: tuple) -> Callable[[dict, dict], bool]:
    """``Topics._partition_change`` of a change whose field names are ``shape`` (in order), in one call:
    ``merge_partition``'s loop unrolled over the shape's fields, generated from ``PARTITION_CHANGE_RECORD``
    (the KEY fields name the partition; each REPLACE field set from a list unless null, each SENTINEL field
    unless ``unchanged``, bumping what it ``bumps``; ``ALWAYS_BUMPS`` bumped), since a log's changes come in
    a few shapes (an ISR change, an election) and reading the table per record costs more than the merge.
    It takes the topics by id and the change, puts a new state in place of the partition's (the old one is
    left as it was: it may be held, ``hold_topic``), and returns False, changing nothing, where the partition
    is not there; whatever may raise does so before the new state is made. A shape without both KEY fields, with a
    placement field, a leaderRecoveryState (whose values are checked) or a field the table does not name has
    none: ``_unshaped`` (False), so the change takes ``merge_partition``, which says what is wrong. Kept for
    later changes of that shape while fewer than ``_SHAPES_KEPT`` are (``change_run`` takes those); once that
    many are kept, a new shape has none either (a log may hold any number of shapes: compiling one for each
    of its records would cost more than it saves)."""
    if len(_shaped) >= _SHAPES_KEPT:  # full: the field-by-field merge, nothing generated per record
        return _unshaped
    lines = _merge_lines(shape)
    if lines is None:
        apply = _unshaped
    else:
        apply = _compiled(["def change_partition(by_id, change):",
                           *_indented(lines, "    ", {"FAIL": "return False", "DONE": "return True"})],
                          f"change of {', '.join(shape)}")["change_partition"]
    _shaped[shape] = apply
    if apply is not _unshaped:
        global _run
        _run = _run_source()
    return apply


def _unshaped(by_id: dict, change: dict) -> bool:
    return False


#: What a decoded PartitionChangeRecord (its fields the schema's, both KEY fields there: ``tests/test_history_kept.py``)
#: must not hold to be left out for a topic whose state nothing reads (``image.KeptTopics``): a field of a shape
#: ``shaped_change`` does not merge in one call (``_merge_lines``), which are PLACEMENT, the replicas and directories
#: later changes are checked against, and leaderRecoveryState, whose values are checked. A change without them cannot
#: be refused once its partition is there (``PartitionRegistration.merge`` reads the partition's own registration
#: only, and ``TopicDelta.replay(PartitionChangeRecord)`` refuses only a partition it does not find) and changes only
#: that partition's ISR, leaders, epochs, ELR and replicas being added or removed.
UNPASSABLE = tuple(name for name, m in PARTITION_CHANGE_RECORD.items()
                   if m.rule == PLACEMENT or _SENTINELS.get(name, (None,) * 4)[3])


#: Shapes (a change's field names in order) -> ``shaped_change``; bounded, as a shape is the input's to choose.
_shaped: dict[tuple, Callable[[dict, dict], bool]] = {}
_SHAPES_KEPT = 256
_CHANGE_API_KEY = BY_TYPE_NAME["PARTITION_CHANGE_RECORD"].api_key


def _merge_lines(shape: tuple) -> list[str] | None:
    """The body of a shaped change (``FAIL``: the partition is not there; ``DONE``: merged), or None."""
    keys = [name for name in shape if PARTITION_CHANGE_RECORD.get(name, Merge(None)).rule == KEY]
    if sorted(keys) != sorted(name for name, m in PARTITION_CHANGE_RECORD.items() if m.rule == KEY):
        return None
    v = {name: f"v{k}" for k, name in enumerate(shape)}
    reads = [f"({''.join(f'{v[name]}, ' for name in shape)}) = change.values()",
             f"topic = by_id.get({v['topicId']})",
             f"old = None if topic is None else topic['partitions'].get({v['partitionId']})",
             "if old is None:", "    FAIL"]
    sets = []
    for name in shape:
        m = PARTITION_CHANGE_RECORD.get(name)
        if m is None or m.rule == PLACEMENT or _SENTINELS.get(name, (None,) * 4)[3]:
            return None
        if m.rule == REPLACE:
            reads += [f"if {v[name]} is not None:", f"    {v[name]} = list({v[name]})"]
            sets += [f"if {v[name]} is not None:", f"    new[{m.state!r}] = {v[name]}"]
        elif m.rule == SENTINEL:
            assert type(m.unchanged) is int, m  # written into the source as it reads
            reads.append(f"s{v[name]} = not {v[name]} == {m.unchanged!r}")
            sets += [f"if s{v[name]}:", f"    new[{m.state!r}] = {v[name]}"]
            if m.bumps is not None:
                reads.append(f"b{v[name]} = old[{m.bumps!r}] + 1 if s{v[name]} else 0")
                sets.append(f"    new[{m.bumps!r}] = b{v[name]}")
    return [*reads, f"epoch = old[{ALWAYS_BUMPS!r}] + 1", "new = {**old}", *sets, f"new[{ALWAYS_BUMPS!r}] = epoch", f"topic['partitions'][{v['partitionId']}] = new", "DONE"]


def _indented(lines: list[str], indent: str, words: dict[str, str]) -> list[str]:
    """``lines`` indented, with ``FAIL`` and ``DONE`` as the caller has them."""
    return [indent + line.replace("FAIL", words["FAIL"]).replace("DONE", words["DONE"]) for line in lines]


def _compiled(lines: list[str], name: str, namespace: dict | None = None) -> dict:
    text = "\n".join(lines) + "\n"
    filename = f"<kraftlog {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # for tracebacks
    namespace = {} if namespace is None else namespace
    exec(compile(text, filename, "exec"), namespace)
    return namespace


def _run_source() -> Callable[[list, int, dict], int]:
    """``change_run``: the shaped changes' bodies inline in one loop, one branch per shape."""
    shapes = [shape for shape, apply in _shaped.items() if apply is not _unshaped]
    lines = ["def change_run(recs, i, by_id):", "    n = len(recs)", "    while i < n:",
             "        rec = recs[i]",
             f"        if type(rec) is not MetadataRecord or rec.api_key != {_CHANGE_API_KEY} or rec.error is not None:",
             "            return i", "        change = rec.data", "        code = codes.get(tuple(change))",
             "        if code is None:", "            return i"]
    for code, shape in enumerate(shapes):
        lines += [f"        {'if' if code == 0 else 'elif'} code == {code}:", "            try:",
                  *_indented(_merge_lines(shape), "                ", {"FAIL": "return i", "DONE": "pass"}),
                  "            except REFUSALS:", "                return i"]
    lines += ["        i += 1", "    return i"]
    codes = {shape: code for code, shape in enumerate(shapes)}
    return _compiled(lines, "change run", {"MetadataRecord": MetadataRecord, "codes": codes,
                                            "REFUSALS": REFUSALS})["change_run"]


_run = _run_source()


class Topics:
    """Topic id -> {name, topicId, partitions}, plus the name index Kafka keeps beside it."""

    def __init__(self) -> None:
        self.by_id: dict[str, dict] = {}
        self.id_by_name: dict[str, str] = {}
        #: Times partitions were dropped (a topic removed, or its id re-created with none), and the topic id
        #: dropped last: the only ways a partition stops being there, so a partition seen while ``dropped``
        #: stands is there still (``image.KeptTopics``).
        self.dropped, self.last_dropped = 0, None

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {
            "TOPIC_RECORD": self._topic,
            "PARTITION_RECORD": self._partition,
            "PARTITION_CHANGE_RECORD": self._partition_change,
            "CLEAR_ELR_RECORD": self._clear_elr,
        }

    def by_name(self, name: str) -> dict | None:
        topic_id = self.id_by_name.get(name)
        return None if topic_id is None else self.by_id[topic_id]

    def _topic_or_problem(self, topic_id: str, what: str) -> dict:
        topic = self.by_id.get(topic_id)
        if topic is None:
            raise ReplayProblem(f"{what} for topic id {topic_id}, which does not exist")
        return topic

    def _topic(self, data: dict) -> None:
        name, topic_id = data["name"], data["topicId"]
        old = self.by_id.get(topic_id)
        if old is not None:
            self.dropped, self.last_dropped = self.dropped + 1, topic_id
            if self.id_by_name.get(old["name"]) == topic_id:
                del self.id_by_name[old["name"]]  # the id is re-created under a new name: one name per id
        self.by_id[topic_id] = {"name": name, "topicId": topic_id, "partitions": {}}
        self.id_by_name[name] = topic_id

    def _partition(self, data: dict) -> None:
        topic = self._topic_or_problem(data["topicId"], "PartitionRecord")
        topic["partitions"][data["partitionId"]] = new_partition(data)

    def change_run(self, recs: list, start: int) -> int:
        """``_partition_change`` of ``recs[start:]`` (``ClusterImage.apply_block``'s records, outside a
        transaction) while each is a decoded PartitionChangeRecord of a shape ``shaped_change`` has merged
        before and its partition is there, in one loop; returns the index of the first record it left (the
        caller applies it as it applies any record: a refusal, a new shape, another record). A record it
        takes changes the image as ``_partition_change`` changes it; one it leaves changes nothing."""
        return _run(recs, start, self.by_id)

    def _partition_change(self, data: dict) -> None:
        """``merge_partition`` of the change into its partition (by ``shaped_change`` where it can)."""
        if not (_shaped.get(shape := tuple(data)) or shaped_change(shape))(self.by_id, data):
            self._partition_change_merged(data)

    def _partition_change_merged(self, data: dict) -> None:
        topic = self.by_id.get(data["topicId"]) or self._topic_or_problem(data["topicId"], "PartitionChangeRecord")
        partition_id = data["partitionId"]
        partitions = topic["partitions"]
        old = partitions.get(partition_id)
        if old is None:
            raise ReplayProblem(f"PartitionChangeRecord for {topic['name']}-{partition_id}, which does not exist")
        partitions[partition_id] = merge_partition(old, data)

    def remove(self, topic_id: str) -> str:
        """Drop a topic and its partitions; returns its name so its configs can go too."""
        topic = self._topic_or_problem(topic_id, "RemoveTopicRecord")
        del self.by_id[topic_id]
        self.dropped, self.last_dropped = self.dropped + 1, topic_id
        if self.id_by_name.get(topic["name"]) == topic_id:
            del self.id_by_name[topic["name"]]
        return topic["name"]

    def _clear_elr(self, data: dict) -> None:
        """Empty both ELR lists where set, as a PartitionChangeRecord would: partition epoch only."""
        name = data.get("topicName", "")
        if name:
            topic = self.by_name(name)
            if topic is None:
                raise ReplayProblem(f"ClearElrRecord for topic {name}, which does not exist")
            topics = [topic]
        else:
            topics = list(self.by_id.values())
        clear = {"eligibleLeaderReplicas": [], "lastKnownElr": []}
        for topic in topics:
            partitions = topic["partitions"]
            for partition_id, partition in partitions.items():
                if partition["eligibleLeaderReplicas"] or partition["lastKnownElr"]:
                    partitions[partition_id] = merge_partition(partition, clear)

    def to_json(self) -> dict:
        return {name: self.topic_json(topic_id) for name, topic_id in sorted(self.id_by_name.items())}

    def topic_json(self, topic_id: str) -> dict:
        """One topic as ``to_json`` shows it (``history`` renders only the topic asked for)."""
        return topic_held_json(self.hold_topic(topic_id))

    def hold_topic(self, topic_id: str) -> tuple[str, dict]:
        """One topic as it stands, for ``topic_held_json`` to render later: a partition's state is replaced,
        never changed in place (``merge_partition``), so a copy of the topic's map holds them as they are."""
        return topic_id, dict(self.by_id[topic_id]["partitions"])

    def partition_json(self, topic_id: str, partition_id: int) -> dict | None:
        """One partition as ``topic_json`` shows it, without rendering its siblings."""
        partition = self.by_id[topic_id]["partitions"].get(partition_id)
        return None if partition is None else dict(partition)


def topic_held_json(held: tuple[str, dict]) -> dict:
    """A topic ``Topics.hold_topic`` held, as ``Topics.topic_json`` shows it."""
    topic_id, partitions = held
    return {"topicId": topic_id, "partitions": sorted_map(partitions, dict)}
