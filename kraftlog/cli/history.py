"""``kraftlog history``: the ordered changes of one topic, partition, broker or config."""

import gc
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from kraftlog.cli import main, target
from kraftlog.cli.render import dumps, iso_time
from kraftlog.files.records import Block, Entry, ReadProblems
from kraftlog.schema import MetadataRecord, entity_of
from kraftlog.schema.entity import fields_of
from kraftlog.schema.metadata import BY_TYPE_NAME
from kraftlog.schema.redact import redact
from kraftlog.state.configs import type_of
from kraftlog.state.ids import key_order
from kraftlog.state.image import FENCE, KEPT, ClusterImage, KeptTopics, KeptWalk
from kraftlog.state.rebuild import earliest_base, load_checkpoint, log_entries, on_disk, starting_point
from kraftlog.state.replay import rare_full_collections
from kraftlog.state.topics import topic_held_json

_BROKER_TYPES = {"REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                 "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "CONFIG_RECORD"}
_TXN = {"BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD"}
_TXN_KEYS = {BY_TYPE_NAME[name].api_key for name in _TXN}
_BROKER_KEYS = {BY_TYPE_NAME[name].api_key for name in _BROKER_TYPES}
_TOPIC, _CLEAR_ELR, _CONFIG = (BY_TYPE_NAME[name].api_key for name in ("TOPIC_RECORD", "CLEAR_ELR_RECORD", "CONFIG_RECORD"))
#: The field ``_Matcher._match`` reads a record's topic id from, whatever its kind (``fields_of``): one name,
#: so ``_Matcher.walk`` reads it without telling the kinds apart.
(_TOPIC_ID,) = {fields_of(m.api_key)["topic_id"] for m in BY_TYPE_NAME.values() if "topic_id" in fields_of(m.api_key)}
_ANSWERS = 1 << 14  # records whose match is remembered (``_Matcher.__call__``)
_HELD = 256  # changes rendered together (``_render``)
_KEPT = 1 << 12  # partition states whose text is kept (``_Texts._partition``)
FAST_TEXT = True  # a topic's partitions' texts kept across changes (``_Texts``); off in tests, to compare
FAST_MARKS = True  # the records ``after`` sees told apart once per walk (``_Changes.marked``); off in tests
LEAVE_OUT = True  # with FAST_MARKS, changes of topics not followed left out of the replay (``_Changes``); off in tests


def add_parser(sub) -> None:
    p = sub.add_parser(
        "history", help="ordered changes of one topic, partition, broker or config, with offsets and times",
        description="Every record that changed the entity, in log order, with its offset, time and leader "
        "epoch, and the entity's state after it. History starts where the log on disk starts (offset 0, or "
        "the earliest snapshot the log continues from).")
    target.add_node_args(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--topic", metavar="NAME")
    g.add_argument("--broker", type=int, metavar="ID")
    g.add_argument("--config", metavar="RESOURCE[:KEY]",
                   help="e.g. TOPIC:orders, TOPIC:orders:retention.ms, BROKER:1, BROKER: (cluster default)")
    p.add_argument("--partition", type=int, metavar="P", help="with --topic: only this partition")
    p.add_argument("--format", choices=["text", "jsonl"], default="text")


class _Matcher:
    """Decides whether a record is about the chosen entity, following topic ids across re-creation."""

    def __init__(self, args, image: ClusterImage) -> None:
        self.topic, self.partition, self.broker = args.topic, args.partition, args.broker
        self.topic_ids = set()
        if self.topic and (t := image.topics.by_name(self.topic)):
            self.topic_ids.add(t["topicId"])
        self.config = None
        if args.config:
            kind, _, rest = args.config.partition(":")
            if not kind or _ != ":":
                raise main.UsageError("--config takes TYPE:NAME[:KEY], e.g. TOPIC:orders or BROKER:1")
            name, _, key = rest.partition(":") if kind.upper() == "TOPIC" else (rest, "", "")
            if kind.upper() == "BROKER" and ":" in rest:
                name, _, key = rest.partition(":")
            self.config = (kind.upper(), name, key or None)
        self._answers: dict[int, tuple[MetadataRecord, bool]] = {}
        self._older: dict[int, tuple[MetadataRecord, bool]] = {}
        #: The kinds ``_match`` may take whatever topic ids it follows, and the transaction markers ``after`` sees;
        #: topics' records of other kinds are taken by topic id (``_TOPIC_ID``) alone.
        told_by_name = {_CONFIG} if self.config else _BROKER_KEYS if self.broker is not None else {
            _TOPIC, _CLEAR_ELR, _CONFIG}
        self.kinds = frozenset(told_by_name | _TXN_KEYS)

    def __call__(self, rec: MetadataRecord) -> bool:
        """``_match``, remembered per record object: a log repeats its records' values, and a value is
        decoded once into one record (``decode_metadata``'s cache). Two generations of ``_ANSWERS`` records
        (an answer found in the old one moves to the new); an answer holds
        until a topic id is added."""
        seen = self._answers.get(id(rec))
        if seen is not None and seen[0] is rec:
            return seen[1]
        seen = self._older.get(id(rec))
        if seen is not None and seen[0] is rec:
            answer = seen[1]
        else:
            known = len(self.topic_ids)
            answer = self._match(rec)
            if len(self.topic_ids) != known:
                self._answers, self._older = {}, {}
        if len(self._answers) >= _ANSWERS:
            self._answers, self._older = {}, self._answers
        self._answers[id(rec)] = (rec, answer)  # the record held, so its id is not another's meanwhile
        return answer

    def walk(self, decoded: list, kept: KeptTopics | None = None) -> tuple[np.ndarray, KeptWalk | None]:
        """Whether each of a walk's records may be one ``_Changes.after`` must see: every record ``_match`` may
        take and every transaction marker, and others (``_Changes.marked`` tells them apart in order). Told by
        kind (``kinds``), and by the topic ids followed or to be followed: those of the topics of the name the walk
        creates, followed from their ``TopicRecord`` on (so a record of such an id before it is a candidate too).
        With ``kept``, also the walk sorted by it, keeping those topic ids (none for a broker's or a config's history,
        which reads no partition): a PartitionChangeRecord is then told by its code (``image.KEPT``), the other kinds
        as without."""
        kinds, ids = self.kinds, set() if self.config or self.broker is not None else self.topic_ids
        flags, walk = self._sorted(decoded, kinds, ids, kept)
        created = {rec.data.get(_TOPIC_ID) for rec in map(decoded.__getitem__, np.flatnonzero(flags).tolist())
                   if rec.api_key == _TOPIC and rec.error is None and rec.data.get("name") == self.topic} - ids
        return (flags, walk) if not created else self._sorted(decoded, kinds, ids | created, kept)

    def _sorted(self, decoded: list, kinds: frozenset[int], ids: set[str],
                kept: KeptTopics | None) -> tuple[np.ndarray, KeptWalk | None]:
        if kept is None:
            return self._candidates(decoded, kinds, ids), None
        walk = kept.walk(decoded, ids)
        flags = walk.codes == KEPT
        told = np.flatnonzero(walk.codes <= FENCE).tolist()  # not PartitionChangeRecords
        flags[told] = self._candidates(list(map(decoded.__getitem__, told)), kinds, ids)
        return flags, walk

    @staticmethod
    def _candidates(decoded: list, kinds: frozenset[int], ids: set[str]) -> np.ndarray:
        if not ids:
            return np.fromiter([type(rec) is MetadataRecord and rec.api_key in kinds for rec in decoded], bool,
                               len(decoded))
        return np.fromiter([type(rec) is MetadataRecord and (rec.api_key in kinds or rec.data.get(_TOPIC_ID) in ids)
                            for rec in decoded], bool, len(decoded))

    def _match(self, rec: MetadataRecord) -> bool:
        """Told by api key (``rec.type``'s, without naming it)."""
        kind = rec.api_key
        if self.config:
            kind_, name, key = self.config
            if kind != _CONFIG:
                return False
            e = entity_of(rec)
            return e["resource_type"] == kind_ and e["resource_name"] == name and (key is None or rec.data["name"] == key)
        if self.broker is not None:
            return kind in _BROKER_KEYS and entity_of(rec)["broker_id"] == self.broker
        if kind == _TOPIC and rec.data["name"] == self.topic:
            self.topic_ids.add(rec.data["topicId"])
            return True
        if kind == _CLEAR_ELR:
            return rec.data.get("topicName", "") in ("", self.topic)
        if kind == _CONFIG:
            return self.partition is None and entity_of(rec)["topic_name"] == self.topic
        fields, data = fields_of(kind), rec.data  # entity_of's topic_id and partition_id, alone
        if "topic_id" in fields and data.get(fields["topic_id"]) in self.topic_ids:
            return self.partition is None or data.get(fields.get("partition_id")) in (None, self.partition)
        return False

    def state(self, image: ClusterImage, redacted: bool):
        """The entity after the change, in the canonical image's shape; only the entity is rendered,
        so a change costs the same in a cluster of any size."""
        return self.rendered(self.held(image, redacted))

    def held(self, image: ClusterImage, redacted: bool):
        """``state`` as ``rendered`` takes it, cheaper to take now: a whole topic is held (its partitions'
        states are never changed in place) and rendered with the changes around it (``_render``)."""
        if not self.config and self.broker is None and self.partition is None:
            topic_id = image.topics.id_by_name.get(self.topic)
            return _Held(None if topic_id is None else image.topics.hold_topic(topic_id))
        return self._state(image, redacted)

    @staticmethod
    def rendered(held):
        """What ``held`` gave, as ``state`` gives it."""
        if type(held) is not _Held:
            return held
        return None if held.topic is None else topic_held_json(held.topic)

    def _state(self, image: ClusterImage, redacted: bool):
        """A config, a broker or one partition, rendered now (their state is changed in place)."""
        if self.config:
            kind, name, key = self.config
            resource_type = type_of(kind)
            values = {} if resource_type is None else image.configs.resource_json((resource_type, name), redacted)
            return values.get(key) if key else values
        if self.broker is not None:
            return image.brokers.broker_json(self.broker)
        topic_id = image.topics.id_by_name.get(self.topic)
        return None if topic_id is None else image.topics.partition_json(topic_id, self.partition)


class _Held(NamedTuple):
    """A topic held by ``_Matcher.held`` (None: no such topic), to be rendered."""

    topic: tuple[str, dict] | None


def _entity(args) -> str:
    if args.config:
        return f"config {args.config}"
    if args.broker is not None:
        return f"broker {args.broker}"
    return f"topic {args.topic}" + (f" partition {args.partition}" if args.partition is not None else "")


def _changes(args, log, start: int, limits, problems: ReadProblems, image: ClusterImage, match: _Matcher,
             out) -> tuple[int, int | None]:
    """Write each change of the entity read from ``start`` on, and the transactions aborted around them;
    (changes shown, the last offset read). Changes are rendered in groups (``_render``), apart from the
    records read between them. A block of records (``files.records.Block``) is applied at once, ``after`` called
    at each change or transaction marker in it (``ClusterImage.apply_block``'s marks)."""
    last = None
    with collected_apart() as freeze:
        changes = _Changes(args, image, match, out, freeze)
        try:  # what was read before a failure is written, as it was before changes were held
            for e in log_entries(log, start, limits, problems, args.apply_invalid, runs="blocks"):
                last = changes.take(e)
        finally:
            changes.flush()
    return changes.shown, last


@contextmanager
def collected_apart() -> Iterator[Callable[[], None]]:
    """What ``_Changes`` calls at each change: ``gc.freeze``, so that the garbage collector, when a change's
    allocations set it off, visits what was allocated since the last change, not the states and records the
    replay made meanwhile (it would, and more of them the larger the cluster: they are young, and a replay's
    allocations and frees leave the collector's count where it was); everything frozen is thawed at the end.
    Reference counting frees the replaced states, as before; only garbage in cycles made meanwhile waits for
    the end (the replay makes none). Where something else froze objects, nothing is frozen (thawing would thaw
    those too)."""
    if gc.get_freeze_count():
        yield _nothing
        return
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()


def _nothing() -> None:
    """In place of ``gc.freeze`` (``collected_apart``)."""


class _Changes:
    """What ``history`` writes, decided record by record after the record is applied: a change of the
    entity, or an abort of the transaction changes were shown in. What it reads of the image is the entity's state
    (``_Matcher.held``: the followed topic's partitions, a broker, a config), the open transaction, the provenance
    and the problems, never another topic's partition states: the changes of topics not followed that only change
    those are left out of the replay (``image.KeptTopics``; ``LEAVE_OUT``), where their partition is there."""

    def __init__(self, args, image: ClusterImage, match: _Matcher, out, freeze: Callable[[], None] = _nothing) -> None:
        self.redacted, self.image, self.match, self.out, self.freeze = not args.no_redact, image, match, out, freeze
        self.texts = _Texts(args.format)
        self.pending: list[int] = []  # offsets of the changes shown inside the open transaction
        self.held: list[tuple] = []  # what is to be written, in order, not yet rendered
        #: A walk's records, its candidates, and the walk sorted by ``kept`` (None: all applied)
        self._walk: tuple[list | None, np.ndarray | None, KeptWalk | None] = (None, None, None)
        self.kept = KeptTopics() if LEAVE_OUT else None
        self.shown = 0

    def take(self, e: Entry | Block) -> int:
        """Apply ``e`` to the image, noting the changes in it; the last offset it holds."""
        image = self.image
        if type(e) is Entry:
            image.apply(*e)
            self.after(e)
            return e.offset
        image.apply_block(e, self.marked(e), lambda i: self.after(e.entry(i)), self._walk[2])
        return e.last

    def flush(self) -> None:
        """Write what is held."""
        _render(self.held, self.texts, self.out)

    def marked(self, block: Block) -> list[int]:
        """The records of ``block`` ``after`` must see (the others it passes over): the changes of the
        entity, and the transaction markers, told apart in order (``_seen``). A walk's blocks share its records
        (``Block.decoded``): those that may be such records (``_Matcher.walk``) are picked once per walk,
        and a block's are picked by its kv indices; the others are not told apart (as ``FAST_MARKS`` off does)."""
        decoded = block.decoded
        if FAST_MARKS:
            if self._walk[0] is not decoded:
                self._walk = (decoded, *self.match.walk(decoded, self.kept))
            picked = np.flatnonzero(self._walk[1][block.kv] & block.active)
        else:
            self._walk = (None, None, None)
            picked = np.flatnonzero(block.active)
        return self._seen(zip(picked.tolist(), map(decoded.__getitem__, block.kv[picked].tolist()), strict=True))

    def _seen(self, records: Iterable[tuple[int, Any]]) -> list[int]:
        """The indices of ``records`` (index, record) ``after`` must see, in order."""
        match = self.match
        return [i for i, rec in records if type(rec) is MetadataRecord and rec.error is None
                and (rec.api_key in _TXN_KEYS or match(rec))]

    def after(self, e: Entry) -> None:
        """``e``, just applied to the image."""
        rec, image = e.record, self.image
        if self.pending and rec.type in _TXN:
            if rec.type == "ABORT_TRANSACTION_RECORD":
                self.held.append((e, None, self.pending, None))
            self.pending = []
            return
        if not isinstance(rec, MetadataRecord) or rec.error is not None or not self.match(rec):
            return
        self.freeze()
        self.shown += 1
        txn = image.transaction
        if txn is not None:
            self.pending.append(e.offset)
        self.held.append((e, redact(rec) if self.redacted else rec, self.match.held(image, self.redacted),
                          None if txn is None else txn.begin_offset))
        if len(self.held) >= _HELD:
            _render(self.held, self.texts, self.out)


def _render(held: list[tuple], texts: "_Texts", out) -> None:
    """Write ``held`` (entries with the record shown, the entity after it and the transaction it is in; or
    with None and the offsets an abort undid) in ``texts``' form and empty it. Rendered together, the code
    stays warm: between two changes of one topic a large cluster's log holds many records, and the
    rendering then costs more."""
    lines = []
    jsonl = texts.form == "jsonl"
    for e, shown_rec, after, txn in held:
        if shown_rec is None:
            lines.append(dumps({"offset": e.offset, "aborted": after}) if jsonl else
                         f"offset {e.offset}: transaction aborted; changes at offsets {after} never took effect")
            continue
        when, after = texts.time(e.timestamp), texts.after(after)
        if jsonl:
            tail = {"after": after} if txn is None else {"after": after, "inTransaction": txn}
            lines.append(texts.row({"offset": e.offset, "time": when, "epoch": e.epoch}, shown_rec, tail))
        else:
            in_txn = f" (in transaction begun at {txn})" if txn is not None else ""
            lines.append(f"offset {e.offset} {when} epoch {e.epoch}{in_txn} {texts.record(e.record, shown_rec)}"
                         f"\n    after: {texts.encoded(after)}")
    if lines:
        out.write("\n".join(lines) + "\n")
    held.clear()


class _Text:
    """JSON text already encoded, written as it is where ``_Texts.encoded`` meets it (the json module
    refuses it: it is never quoted as a string by mistake)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Texts:
    """The JSON text ``history`` writes in ``form`` ("jsonl": ``render.dumps``, "text": ``json.dumps``), a held
    topic's built from parts kept while they stand: a change replaces one partition's state, never changes
    one in place (``topics.merge_partition``), so most of a topic's text is the last change's and its cost
    does not grow with the topic. ``FAST_TEXT`` off: every value encoded whole (the general path)."""

    def __init__(self, form: str) -> None:
        self.form, self.fast = form, FAST_TEXT
        self.encode, self.item, self.key = (dumps, ",", ":") if form == "jsonl" else (json.dumps, ", ", ": ")
        self._kept: dict[int, tuple[dict, int, str]] = {}  # id(state) -> (state, partition id, "id":state text)
        self._older: dict[int, tuple[dict, int, str]] = {}
        self._orders: dict[tuple, list[int]] = {}  # a topic's partition ids as held -> in ``key_order``
        self._frames: dict[str, str] = {}  # topic id -> its text without partitions, less the closing "}}"
        self._records: dict[Any, tuple[Any, Any, str]] = {}  # value or ids -> (shown, record, ``record``'s text)
        self._older_records: dict[Any, tuple[Any, Any, str]] = {}
        self._times: dict[int, str | None] = {}  # ms -> ``iso_time``

    def time(self, ms: int) -> str | None:
        """``iso_time(ms)``: the changes of a batch share its time."""
        if not self.fast:
            return iso_time(ms)
        when = self._times.get(ms, self)
        if when is self:
            if len(self._times) >= _KEPT:
                self._times.clear()
            when = self._times[ms] = iso_time(ms)
        return when

    def row(self, head: dict, shown: MetadataRecord, tail: dict) -> str:
        """``extended({**head, **shown.to_json()}, tail)`` (jsonl), ``shown``'s part its kept ``record`` text."""
        if not self.fast:
            return self.extended({**head, **shown.to_json()}, tail)
        return self.encode(head)[:-1] + self.item + self.record(shown, shown) + self.item + self._members(tail) + "}"

    def record(self, rec, shown) -> str:
        """The text of a change's record, kept in two generations of ``_KEPT``: by the value the record was decoded
        from (``raw``: a log repeats its values, and a value decodes to one record, whatever object holds it), or, for
        a record without one (a redacted copy), by the identity of ``shown`` (``rec`` redacted) and ``rec``. jsonl:
        ``shown.to_json()``'s members, for ``row``; text: the type and version of ``rec`` and ``shown``'s data."""
        if not self.fast:
            return self._record(rec, shown)
        by_value = shown is rec and type(rec) is MetadataRecord and bool(rec.raw)
        key = rec.raw if by_value else (id(shown), id(rec))
        seen = self._records.get(key)
        if seen is None or not (by_value or seen[0] is shown and seen[1] is rec):
            seen = self._older_records.get(key)
            if seen is None or not (by_value or seen[0] is shown and seen[1] is rec):
                text = self._record(rec, shown)
                seen = (None, None, text) if by_value else (shown, rec, text)  # the objects held while their ids are
            if len(self._records) >= _KEPT:
                self._records, self._older_records = {}, self._records
            self._records[key] = seen
        return seen[2]

    def _record(self, rec, shown) -> str:
        if self.form != "jsonl":
            return f"{rec.type} v{rec.version} {dumps(shown.to_json()['data'])}"
        members = shown.to_json()
        if not members or members.keys() & {"offset", "time", "epoch", "after", "inTransaction"}:
            raise TypeError(f"history writes a record's members beside its own, not {list(members)!r}")
        return self._members(members)

    def after(self, held):
        """What ``_Matcher.held`` gave, as ``_Matcher.rendered`` gives it, or a held topic as its text."""
        if type(held) is not _Held or held.topic is None or not self.fast:
            return _Matcher.rendered(held)
        return _Text(self._topic(held.topic))

    def encoded(self, value) -> str:
        """``encode(value)``; an ``after`` text as it is."""
        return value.text if type(value) is _Text else self.encode(value)

    def extended(self, head: dict, tail: dict) -> str:
        """``encode({**head, **tail})``, ``tail``'s values ``encoded`` (its keys are not ``head``'s)."""
        if not self.fast:
            return self.encode({**head, **tail})
        if head and not head.keys() & tail.keys():
            return self.encode(head)[:-1] + self.item + self._members(tail) + "}"
        return "{" + self._members({**head, **tail}) + "}"

    def _members(self, obj: dict) -> str:
        """``encode(obj)`` without its braces, each value ``encoded``; a key that is not text is refused (the
        json module would write it otherwise)."""
        if any(type(k) is not str for k in obj):
            raise TypeError(f"history writes objects with text keys only, not {list(obj)!r}")
        return self.item.join([self.encode(k) + self.key + self.encoded(v) for k, v in obj.items()])

    def _topic(self, held: tuple[str, dict]) -> str:
        """``encode(topic_held_json(held))``: its text with no partitions (the partitions object last in it,
        else the general path), each partition's ``"id":state`` text put in, in ``key_order``."""
        topic_id, partitions = held
        frame = self._frames.get(topic_id)
        if frame is None:
            frame = self.encode(topic_held_json((topic_id, {})))
            frame = self._frames[topic_id] = frame[:-2] if frame.endswith("{}}") else ""
        ids = tuple(partitions)
        order = self._orders.get(ids)
        if order is None:
            if len(self._orders) >= _KEPT:
                self._orders.clear()
            order = self._orders[ids] = sorted(ids, key=key_order) if all(type(k) is int for k in ids) else []
        if not frame or len(order) != len(ids):
            return self.encode(topic_held_json(held))
        return frame + self.item.join([self._partition(k, partitions[k]) for k in order]) + "}}"

    def _partition(self, partition_id: int, state: dict) -> str:
        """``"id":state`` as ``_topic`` puts it in, kept by the state's identity (the state held with it) in two
        generations of ``_KEPT``."""
        seen = self._kept.get(id(state))
        if seen is None or seen[0] is not state or seen[1] != partition_id:
            seen = self._older.get(id(state))
            if seen is None or seen[0] is not state or seen[1] != partition_id:
                seen = (state, partition_id, self.encode(str(partition_id)) + self.key + self.encode(state))
            if len(self._kept) >= _KEPT:
                self._kept, self._older = {}, self._kept
            self._kept[id(state)] = seen
        return seen[2]


def run(args) -> int:
    limits = main.limits_of(args)
    log = target.open_log(args)
    base = earliest_base(log)
    if base is None:
        raise main.Refused(f"no log from offset 0 and no snapshot the log continues from: {on_disk(log)}")
    problems = ReadProblems()
    image, start, described = starting_point(log, None, None, base, limits, problems)
    match = _Matcher(args, image)
    redacted = not args.no_redact
    existed = match.state(image, redacted) not in (None, {})
    out = sys.stdout
    print(f"kraftlog: history from {described}", file=sys.stderr)
    if existed:  # the entity's state where the history starts, before the first change read
        at, state = image.provenance.offset, match.state(image, redacted)
        out.write((dumps({"offset": at, "base": described, "after": state}) if args.format == "jsonl" else
                   f"offset {at} {described}\n    state: {json.dumps(state)}") + "\n")
    with rare_full_collections():
        shown, last = _changes(args, log, start, limits, problems, image, match, out)
    read = f"{described}" + (f" to offset {last}" if last is not None else "")
    end = image.provenance.offset
    later = [snap for snap in log.snapshots if snap.offset - 1 > end]
    if later:
        problems.messages.append(f"the history ends at offset {end}, but snapshot {later[-1].path.name} shows the "
                                 f"log went on to offset {later[-1].offset - 1}: the changes in between are not on disk")
    for m in problems.messages + [f"offset {p.offset} {p.type}: {p.message}" for p in image.problems]:
        print(f"kraftlog: problem: {m}", file=sys.stderr)
    if not shown and not existed:
        held = load_checkpoint(later[-1], limits) if later else None
        if held is not None and _Matcher(args, held).state(held, redacted) not in (None, {}):
            print(f"kraftlog: {_entity(args)} is not in the log read ({read}), but snapshot {later[-1].path.name} "
                  f"holds it: the records that made it are not on disk", file=sys.stderr)
        else:
            print(f"kraftlog: {_entity(args)} never existed in the log read ({read})", file=sys.stderr)
        return 1
    print(f"kraftlog: {shown} changes", file=sys.stderr)
    return 1 if problems.messages or image.problems else 0
