"""The cluster image: every domain plus Kafka's metadata-transaction rule, fed one record at a time."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from kraftlog.files.records import Block
from kraftlog.schema.metadata import BY_TYPE_NAME
from kraftlog.schema.records import MetadataRecord, key_fields
from kraftlog.state.acls import Acls
from kraftlog.state.brokers import Brokers
from kraftlog.state.configs import TOPIC, Configs
from kraftlog.state.controllers import Controllers
from kraftlog.state.features import Features
from kraftlog.state.problems import REFUSALS, Problem, ReplayProblem
from kraftlog.state.producer_ids import ProducerIds
from kraftlog.state.quotas import ClientQuotas
from kraftlog.state.raft import Raft
from kraftlog.state.scram import Scram
from kraftlog.state.tokens import DelegationTokens
from kraftlog.state.topics import UNPASSABLE, Topics

BEGIN = "BEGIN_TRANSACTION_RECORD"
END = "END_TRANSACTION_RECORD"
ABORT = "ABORT_TRANSACTION_RECORD"

#: Records that change nothing in the image (they still advance its provenance). Kafka ignores
#: control types it does not know; an unknown metadata api key arrives with ``error`` set instead.
_NO_EFFECT = ("NO_OP_RECORD", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "ABORT", "COMMIT", "UNKNOWN")


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where the image stands in the log: the last applied record's offset, batch epoch and time."""

    offset: int = -1
    epoch: int = -1
    timestamp: int = -1

    def to_json(self) -> dict:
        return {"offset": self.offset, "epoch": self.epoch, "timestamp": self.timestamp}


@dataclass(slots=True)
class OpenTransaction:
    """A metadata transaction begun and not yet ended; its records wait here, unapplied."""

    begin_offset: int
    name: str | None
    records: list[tuple[Callable[[dict], None], Any, int]] = field(default_factory=list)


class ClusterImage:
    """Kafka's MetadataImage as plain mutable Python, replayed with the broker's rules.

    A record Kafka would refuse is recorded in ``problems`` and skipped. Records between
    Begin- and EndTransactionRecord are held back and applied at End, dropped at Abort
    (OffsetControlManager's rule), so the image never shows half a transaction."""

    def __init__(self) -> None:
        self.features = Features()
        self.brokers = Brokers()
        self.controllers = Controllers()
        self.topics = Topics()
        self.configs = Configs()
        self.client_quotas = ClientQuotas()
        self.acls = Acls()
        self.scram = Scram()
        self.delegation_tokens = DelegationTokens()
        self.producer_ids = ProducerIds()
        self.raft = Raft()
        self._provenance = Provenance()
        #: (offset, epoch, timestamp) of a record applied since ``provenance`` was last built: a
        #: Provenance per record would cost more than the record's change (``provenance`` builds it).
        self._at: tuple[int, int, int] | None = None
        self.problems: list[Problem] = []
        self.transaction: OpenTransaction | None = None
        #: While a transaction's records are applied (one delta in Kafka): the config resources before it.
        self._delta_configs: frozenset[tuple[int, str]] | None = None
        self._handlers: dict[str, Callable[[dict], None]] = {
            **self.features.handlers(),
            **self.brokers.handlers(),
            **self.controllers.handlers(),
            **self.topics.handlers(),
            **self.configs.handlers(),
            **self.client_quotas.handlers(),
            **self.acls.handlers(),
            **self.scram.handlers(),
            **self.delegation_tokens.handlers(),
            **self.producer_ids.handlers(),
            "REMOVE_TOPIC_RECORD": self._remove_topic,
            **dict.fromkeys(_NO_EFFECT, _ignore),
        }
        self._raft_handlers = self.raft.handlers()
        #: Metadata api key -> handler, for what ``apply`` does with a decoded record outside a
        #: transaction (the transaction markers keep the general path).
        self._by_api_key = {message.api_key: handler for name, handler in self._handlers.items()
                            if (message := BY_TYPE_NAME.get(name)) is not None and name not in (BEGIN, END, ABORT)}

    @classmethod
    def empty(cls) -> ClusterImage:
        """The state before any record; a snapshot is replayed onto this."""
        return cls()

    @property
    def provenance(self) -> Provenance:
        if self._at is not None:
            self._provenance, self._at = Provenance(*self._at), None
        return self._provenance

    @provenance.setter
    def provenance(self, value: Provenance) -> None:
        self._provenance, self._at = value, None

    def apply(self, rec: Any, offset: int, timestamp: int = -1, epoch: int = -1) -> None:
        """Replay one decoded record (anything with ``type``, ``data`` and ``error``) at ``offset``."""
        if epoch > self.raft.leader_epoch:
            self.raft.observe_epoch(epoch)
        if type(rec) is MetadataRecord and rec.error is None and self.transaction is None and (
                handler := self._by_api_key.get(rec.api_key)) is not None:
            # the general path's last branch, without its tests: most of a log's records (``_run`` inline)
            try:
                handler(rec.data)
            except REFUSALS as exc:
                self._refused(rec, offset, exc)
            self._at = (offset, epoch, timestamp)
            return
        kind = rec.type
        error = getattr(rec, "error", None)
        if error is not None:
            self._report(offset, kind, _not_applied(rec, error))
        elif kind in self._raft_handlers:
            # Raft control records are not part of metadata transactions.
            self._run(self._raft_handlers[kind], rec, offset)
        elif kind in (BEGIN, END, ABORT):
            self._transaction_marker(kind, rec, offset)
        elif (handler := self._handlers.get(kind)) is None:
            self._report(offset, kind, "unknown record type")
        elif self.transaction is not None:
            self.transaction.records.append((handler, rec, offset))
        else:
            self._run(handler, rec, offset)
        self._advance(offset, epoch, timestamp)

    def pass_over(self, offset: int, timestamp: int = -1, epoch: int = -1) -> bool:
        """``apply`` of a record of no effect (a NoOp) when that is all it does, cheaper: outside a
        transaction it only observes the epoch and advances provenance. False (nothing done) inside one,
        where it must be held with the transaction's records: ``apply`` it then."""
        if self.transaction is not None:
            return False
        self.raft.observe_epoch(epoch)
        self._at = (offset, epoch, timestamp)
        return True

    def pass_over_run(self, offsets: np.ndarray, timestamps: np.ndarray, epochs: np.ndarray) -> None:
        """``pass_over`` of each of records of consecutive offsets outside a transaction, at once: the
        highest epoch observed (what observing each in turn leaves), provenance the last record's."""
        self.raft.observe_epoch(int(epochs.max()))
        self._at = (int(offsets[-1]), int(epochs[-1]), int(timestamps[-1]))

    def apply_block(self, block: Block, marks: list[int] = (), after: Callable[[int], None] | None = None,
                    kept: KeptWalk | None = None) -> None:
        """``apply`` of each of a block's records in turn, cheaper: its NoOps only advance the image (or
        are held with an open transaction's records, as ``apply`` holds them), and outside a transaction
        a decoded metadata record goes to its handler by api key, ``apply``'s first branch inline, and a
        stretch of PartitionChangeRecords to ``Topics.change_run``, which takes them as their handler would.
        ``after(i)`` is called right after record ``i`` of ``marks`` (increasing indices of records that are
        not NoOps) is applied, the image then as ``apply`` would leave it: a block is not cut to look at it.

        ``kept`` (the block's walk sorted by ``KeptTopics.walk``): only the topics it keeps are replayed whole.
        Outside a transaction, the changes ``KeptTopics`` may leave out are left out where their partition is
        there (they change only that partition's state, which nothing reads then, and cannot be refused); the
        others, and all in a transaction, are applied. The image's other partitions' states are then not Kafka's
        (their ISR, leaders, epochs, ELR), all else is: which topics and partitions there are, their replicas and
        directories, the problems and the provenance. A mark ``kept`` would leave out is refused (ValueError).

        Invariants: outside a transaction the provenance ``apply`` leaves after a record is that record's,
        so it is set once, before a record ``apply`` takes, at a mark and at the end. Only the Raft handlers
        (control records, which ``apply`` takes) see the epochs observed, so those are observed before such a
        record (the highest up to it, as one by one would leave them), at a mark and at the end."""
        active = np.flatnonzero(block.active)
        offsets, timestamps, epochs = block.offsets, block.timestamps, block.epochs
        txn = self.transaction
        ends = np.zeros(0, np.intp)
        if len(marks):
            ends = np.searchsorted(active, marks, side="right")
            if not (len(active) and ends[0] and (np.diff(marks) > 0).all() and (active[ends - 1] == marks).all()):
                raise ValueError(f"marks {marks} are not increasing indices of the block's records that are not NoOps")
        if len(active):
            by_api_key, apply = self._by_api_key, self.apply
            highest = None
            done = 0  # records before this one are applied
            change_run = self.topics.change_run
            for run_indices, run_recs, marked in self._runs(block, active, ends, kept):
                at, m = 0, len(run_recs)
                while at < m:
                    if txn is None and (taken := change_run(run_recs, at)) > at:  # its partition changes, at once
                        done, at = run_indices[taken - 1] + 1, taken
                        if at == m:
                            break
                    i, rec = run_indices[at], run_recs[at]
                    if txn is None and type(rec) is MetadataRecord and rec.error is None and (
                            handler := by_api_key.get(rec.api_key)) is not None:
                        try:
                            handler(rec.data)
                        except REFUSALS as exc:
                            self._refused(rec, int(offsets[i]), exc)
                    elif txn is not None:  # its records are held, the NoOps among them too
                        for j in range(done, i + 1):
                            apply(*block.entry(j))
                        txn = self.transaction
                    else:
                        if i:
                            self._at = (int(offsets[i - 1]), int(epochs[i - 1]), int(timestamps[i - 1]))
                        if highest is None:
                            highest = np.maximum.accumulate(epochs)
                        self.raft.observe_epoch(int(highest[i]))
                        apply(rec, int(offsets[i]), int(timestamps[i]), int(epochs[i]))
                        txn = self.transaction
                    done = i + 1
                    at += 1
                if marked:
                    i = done - 1
                    if txn is None:
                        if highest is None:
                            highest = np.maximum.accumulate(epochs)
                        self.raft.observe_epoch(int(highest[i]))
                        self._at = (int(offsets[i]), int(epochs[i]), int(timestamps[i]))
                    after(i)
            if txn is not None:
                for j in range(done, len(block)):
                    apply(*block.entry(j))
                return
        self.pass_over_run(offsets, timestamps, epochs)

    def _runs(self, block: Block, active: np.ndarray, ends: np.ndarray, kept: KeptWalk | None):
        """``apply_block``'s records (of ``active``) as runs (record indices, records, whether the run ends at a
        mark), cut after each mark (``ends``: the runs' ends, in ``active``), with what ``kept`` leaves out left out.
        Told apart lazily: a run is made once those before it are applied, so where ``kept`` may leave changes
        out, their partitions are looked for as the image then stands (``KeptTopics.left_out``). Such a stretch
        ends after each record that may drop partitions (``FENCE``), so none is dropped within it."""
        decoded, kvs = block.decoded, block.kv[active]
        codes = None if kept is None or kept.decoded is not decoded else kept.codes[kvs]
        if codes is None or not (passed := codes >= 0).any():
            indices, recs = active.tolist(), list(map(decoded.__getitem__, kvs.tolist()))
            for k, (lo, hi) in enumerate(itertools.pairwise([0, *ends.tolist(), len(indices)])):
                yield indices[lo:hi], recs[lo:hi], k < len(ends)
            return
        if passed[ends - 1].any():
            raise ValueError("a mark is a change the kept topics leave out")
        at_marks = ends - 1
        for lo, hi in itertools.pairwise([0, *(np.flatnonzero(codes == FENCE) + 1).tolist(), len(active)]):
            if lo == hi:
                continue
            if self.transaction is None:
                taken = lo + np.flatnonzero(~kept.owner.left_out(self.topics, kept, kvs[lo:hi], passed[lo:hi]))
            else:
                taken = np.arange(lo, hi)
            cuts = np.searchsorted(taken, at_marks[(at_marks >= lo) & (at_marks < hi)], side="right").tolist()
            indices, recs = active[taken].tolist(), list(map(decoded.__getitem__, kvs[taken].tolist()))
            for k, (a, z) in enumerate(itertools.pairwise([0, *cuts, len(taken)])):
                if a < z or k < len(cuts):
                    yield indices[a:z], recs[a:z], k < len(cuts)

    def _run(self, handler: Callable[[dict], None], rec: Any, offset: int) -> None:
        try:
            handler(rec.data)
        except REFUSALS as exc:
            self._refused(rec, offset, exc)

    def _refused(self, rec: Any, offset: int, exc: Exception) -> None:
        """A handler's refusal as a problem: its own words, or the malformed field it tripped on."""
        if isinstance(exc, ReplayProblem):
            self._report(offset, rec.type, str(exc))
        else:
            self._report(offset, rec.type, f"malformed record: {type(exc).__name__}: {exc}")

    def _report(self, offset: int, kind: str, message: str) -> None:
        self.problems.append(Problem(offset, kind, message))

    def _advance(self, offset: int, epoch: int, timestamp: int) -> None:
        """Only outside a transaction: while one is open the image stays the pre-Begin one."""
        if self.transaction is None:
            self._at = (offset, epoch, timestamp)

    def _transaction_marker(self, kind: str, rec: Any, offset: int) -> None:
        txn = self.transaction
        if kind == BEGIN:
            if txn is not None:
                self._report(offset, kind, f"transaction begun at {txn.begin_offset} is still open")
            else:
                self.transaction = OpenTransaction(offset, rec.data.get("name"))
        elif txn is None:
            self._report(offset, kind, "no transaction is open")
        else:
            self.transaction = None
            if kind == END:
                self._delta_configs = frozenset(self.configs.resources)
                for handler, held, held_offset in txn.records:
                    self._run(handler, held, held_offset)
                self._delta_configs = None

    def _remove_topic(self, data: dict) -> None:
        """RemoveTopicRecord also deletes the topic's configs (MetadataDelta does both), but only those
        the image held before the delta: configs of a topic created and deleted in one delta (here, one
        metadata transaction) stay, as ``ConfigurationsDelta.replay(RemoveTopicRecord, String)`` keeps
        them (apache/kafka 4.2.0-rc1, ConfigurationsDelta.java line 73: ``image.resourceData()``)."""
        name = self.topics.remove(data["topicId"])
        if self._delta_configs is None or (TOPIC, name) in self._delta_configs:
            self.configs.remove_resource(TOPIC, name)

    def to_json(self, redact: bool = True) -> dict:
        """The canonical image: deterministic, secrets redacted unless ``redact`` is False."""
        return {
            "provenance": self.provenance.to_json(),
            "features": self.features.to_json(),
            "brokers": self.brokers.to_json(),
            "controllers": self.controllers.to_json(),
            "topics": self.topics.to_json(),
            "configs": self.configs.to_json(redact),
            "clientQuotas": self.client_quotas.to_json(),
            "acls": self.acls.to_json(),
            "scram": self.scram.to_json(redact),
            "delegationTokens": self.delegation_tokens.to_json(),
            "producerIds": self.producer_ids.to_json(),
            "zkMigrationState": self.features.zk_migration_state_name,
        }


#: ``KeptTopics.walk``'s codes of a walk's values that are not changes it may leave out (those have their partition's
#: key, 0 or more): a PartitionChangeRecord of a kept topic; another it must apply (holding ``UNPASSABLE``); a record
#: that may drop partitions (``Topics.dropped``: a TopicRecord re-creating an id, a RemoveTopicRecord; a transaction
#: marker, whose End applies the records it held); anything else.
KEPT, CHANGE, FENCE, OTHER = -1, -2, -3, -4
_CHANGE_KEY = BY_TYPE_NAME["PARTITION_CHANGE_RECORD"].api_key
_FENCE_KEYS = frozenset(BY_TYPE_NAME[name].api_key for name in ("TOPIC_RECORD", "REMOVE_TOPIC_RECORD", BEGIN, END, ABORT))
_KEYS_KEPT = 1 << 18  # partitions ``KeptTopics`` keeps keys of (they are the input's to choose)


class KeptWalk(NamedTuple):
    """A walk's values (``Block.decoded``) as ``KeptTopics.walk`` sorted them: per value, its code or its partition's
    key."""

    decoded: list
    codes: np.ndarray
    owner: KeptTopics
    keys: _Keys


class _Keys(dict):
    """(topic id, partition id) -> key, numbered in order, and each topic id's slot (numbered as first met)."""

    def __init__(self) -> None:
        super().__init__()
        self.named: list[tuple[str, int]] = []
        self.slots: dict[str, int] = {}

    def __missing__(self, partition: tuple[str, int]) -> int:
        self.named.append(partition)
        self.slots.setdefault(partition[0], len(self.slots))
        key = self[partition] = len(self.named) - 1
        return key


class KeptTopics:
    """What ``ClusterImage.apply_block`` may leave out of a replay that reads only some topics' states (``history
    --topic``): the decoded PartitionChangeRecords of the other topics that hold none of ``topics.UNPASSABLE``, so
    cannot be refused once their partition is there and leave its replicas and directories as they were (and no
    handler reads another partition's ISR, leaders, epochs or ELR but to change that partition: ``Topics._clear_elr``).
    Which topics are kept is the caller's to say: those whose states it reads. Each walk's values are sorted once
    (``walk``); a block then looks for the partitions of the changes it leaves out (``left_out``), each partition
    found once while no partitions are dropped from its topic (``Topics.dropped``), a partition not found at
    each look (its changes are then applied, and refused as ``apply`` refuses them)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._keys = _Keys()
        self._key_topic = np.zeros(0, np.intp)  # key -> its topic's slot
        self._seen = np.zeros(0, np.int64)  # key -> the incarnation of its topic it was found in (-1: not found)
        self._incarnation = np.zeros(0, np.int64)  # topic slot -> times its partitions were dropped
        self._topics: Topics | None = None
        self._dropped = 0

    def walk(self, decoded: list, kept_ids: set[str]) -> KeptWalk:
        """``decoded`` sorted: the decoded changes of topics not in ``kept_ids`` that hold none of ``UNPASSABLE`` as
        their partition's key, the others as ``KEPT``, ``CHANGE``, ``FENCE`` or ``OTHER`` (a record not decoded
        from a value, ``raw`` empty, is ``OTHER``: its fields may be any)."""
        if len(self._keys) > _KEYS_KEPT:
            self._reset()
        keys, change, fences = self._keys, _CHANGE_KEY, _FENCE_KEYS
        placement, placed, recovery = UNPASSABLE
        known = len(keys.named)
        codes = np.fromiter([
            (CHANGE if placement in (data := rec.data) or placed in data or recovery in data else
             keys[data["topicId"], data["partitionId"]])
            if type(rec) is MetadataRecord and rec.api_key == change and rec.error is None and rec.raw else
            FENCE if type(rec) is MetadataRecord and rec.api_key in fences else OTHER
            for rec in decoded], np.int64, len(decoded))
        if len(keys.named) > known:
            new_slots = [keys.slots[topic_id] for topic_id, _ in keys.named[known:]]
            self._key_topic = np.concatenate([self._key_topic, np.array(new_slots, np.intp)])
            self._seen = np.concatenate([self._seen, np.full(len(keys.named) - known, -1, np.int64)])
            self._incarnation = np.concatenate([self._incarnation,
                                                np.zeros(len(keys.slots) - len(self._incarnation), np.int64)])
        slots = [slot for topic_id in kept_ids if (slot := keys.slots.get(topic_id)) is not None]
        if slots:  # the kept topics' changes
            kept = np.zeros(len(keys.slots), bool)
            kept[slots] = True
            codes[(codes >= 0) & kept[self._key_topic[np.maximum(codes, 0)]]] = KEPT
        for i in np.flatnonzero(codes == CHANGE).tolist():
            if decoded[i].data.get("topicId") in kept_ids:
                codes[i] = KEPT
        return KeptWalk(decoded, codes, self, keys)

    def left_out(self, topics: Topics, walk: KeptWalk, kvs: np.ndarray, passed: np.ndarray) -> np.ndarray:
        """Which of a stretch of records (values ``kvs``, those ``walk`` may leave out ``passed``) to leave out, as
        ``topics`` stands before the stretch and all through it (nothing in it drops partitions): those whose
        partition is there."""
        if walk.keys is not self._keys:  # sorted before the keys were dropped: nothing is left out
            return np.zeros(len(kvs), bool)
        self._follow(topics)
        key = walk.codes[kvs[passed]]
        found = self._seen[key] == self._incarnation[self._key_topic[key]]
        if not found.all():
            by_id = topics.by_id
            for k in np.unique(key[~found]).tolist():
                topic_id, partition_id = self._keys.named[k]
                topic = by_id.get(topic_id)
                if topic is not None and partition_id in topic["partitions"]:
                    self._seen[k] = self._incarnation[self._key_topic[k]]
            found = self._seen[key] == self._incarnation[self._key_topic[key]]
        out = passed.copy()
        out[passed] = found
        return out

    def _follow(self, topics: Topics) -> None:
        """The topics whose partitions were dropped since the last look, as new incarnations (all of them where
        more than one was dropped, or the image is another)."""
        if topics is not self._topics:
            self._topics, self._dropped = topics, topics.dropped
            self._incarnation += 1
        elif topics.dropped != self._dropped:
            slot = self._keys.slots.get(topics.last_dropped) if topics.dropped == self._dropped + 1 else -1
            if slot == -1:
                self._incarnation += 1
            elif slot is not None:
                self._incarnation[slot] += 1
            self._dropped = topics.dropped


def _not_applied(rec: Any, error: str) -> str:
    """A record kept raw is not applied; say which entity it would have updated, where its leading
    fields still read (``raw`` is absent from stand-ins, and from redacted secrets)."""
    keys = key_fields(rec) if isinstance(rec, MetadataRecord) else {}
    where = ", ".join(f"{k}={v}" for k, v in keys.items())
    return f"not applied{f' to {where}' if where else ''}: {error}"


def _ignore(data: dict) -> None:
    """Handler for records that only advance the offset."""
