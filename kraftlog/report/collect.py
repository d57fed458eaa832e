"""Walk one node's log once, replaying as it goes, into a ``Timeline``.

Changes are read off the replayed image, not the records, so they follow Kafka's rules: a
PartitionChangeRecord that names the current leader is no leader change, records of an aborted
metadata transaction change nothing, and those of a committed one count when it commits.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from kraftlog.files.copies import Log
from kraftlog.files.logdir import NodeDir
from kraftlog.files.reader import Limits
from kraftlog.files.records import NO_OP, Block, Entry, ReadProblems, is_no_op
from kraftlog.report.cells import Cells
from kraftlog.report.columns import CHANGE, COUNTED, LEADER_EPOCH, PARTITION_EPOCH, PASSED_STATES, change_of
from kraftlog.report.model import (
    HEALTH,
    BrokerLane,
    Bucket,
    Capped,
    Epoch,
    Event,
    Health,
    PartitionHealth,
    PartitionTrack,
    Timeline,
    next_width,
)
from kraftlog.report.partitions import TOP_PARTITIONS
from kraftlog.schema import MetadataRecord
from kraftlog.schema.entity import ACL_RESOURCE_TYPES
from kraftlog.schema.metadata import BY_TYPE_NAME
from kraftlog.schema.redact import REDACTED, is_secret_config
from kraftlog.state.acls import OPERATIONS, PERMISSION_TYPES
from kraftlog.state.brokers import Brokers, broker_state
from kraftlog.state.configs import BROKER, TOPIC, resource_key
from kraftlog.state.features import METADATA_VERSION, ZK_MIGRATION_STATES, metadata_version_name
from kraftlog.state.image import ABORT, BEGIN, END, ClusterImage
from kraftlog.state.problems import REFUSALS
from kraftlog.state.quotas import entity_key, entity_of
from kraftlog.state.rebuild import as_log, earliest_base, log_entries, starting_point
from kraftlog.state.replay import rare_full_collections
from kraftlog.state.topics import NO_LEADER_CHANGE, merge_partition

#: Most time buckets a report keeps; the page draws one column per bucket.
MAX_BUCKETS = 240
#: Transitions kept per broker (first and last halves): a crash-looping broker must not swell the page.
LANE_EVENTS = 100
_SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MIN_ISR = "min.insync.replicas"
#: Kafka's default min.insync.replicas (ServerLogConfigs / TopicConfig); a broker's static
#: server.properties could set another, and it is not in the log.
KAFKA_MIN_ISR = 1
#: Whether NoOps outside a transaction take the short way (tests compare both ways).
FAST_NOOPS = True
#: Whether NoOps and the PartitionChangeRecords ``columns`` takes are folded as columns (``add_records``;
#: tests compare both ways).
FAST_COLUMNS = True
#: Whether PartitionChangeRecords with ``columns.PASSED`` fields are folded too (tests compare both ways).
FAST_PASSED = True
#: Whether PartitionChangeRecords with replicas (``columns.COUNTED``, a reassignment's) are folded too (tests compare).
FOLDED_REPLICAS = True
#: Whether a broker record that moves its broker's availability to lead is folded too where its broker leads
#: partitions up to it in the stretch: their flags are rechecked where it comes (``_flip_rows``; tests compare).
FOLDED_FLIPS = True
#: Most records of the blocks ``collect`` joins into one for ``add_records`` (1: none joined; tests).
JOINED_RECORDS = 1 << 15
#: Removed partitions kept at most (those of most churn; None: all): the page draws TOP_PARTITIONS,
#: and a removed partition's churn is final, so the rest can go as topics come and go.
REMOVED_KEPT: int | None = TOP_PARTITIONS
#: Records that change partitions only: no config, broker or epoch a partition's health reads.
_PARTITION_KINDS = frozenset({"PARTITION_RECORD", "PARTITION_CHANGE_RECORD"})
_NO_FLAGS = (False,) * len(HEALTH)  # a partition that is not there
#: ``health``'s flags by the number folds give them (bit i: flag i of HEALTH), and the number of each.
_FLAG_TUPLES = [tuple(bool(n >> i & 1) for i in range(len(HEALTH))) for n in range(1 << len(HEALTH))]
_FLAG_NUMBERS = {flags: n for n, flags in enumerate(_FLAG_TUPLES)}
_FLAG_BITS = np.arange(len(HEALTH))
_OTHER, _NOOP, _CHANGE = 0, 1, 2  # what a record of a ``Block`` is to ``add_records``
#: Whether ISRs of brokers 0.._MASK_BITS-1 are compared as bits (``_isr_masks``; tests compare both ways).
MASKED_ISRS = True
_MASK_BITS = 63  # bits of an int64 a broker may take (the sign bit not)
#: Partition numbers ``_distinct_keys`` sorts at most (beyond: marked in a table), and the partitions a fold's
#: changes are grouped by as 16-bit numbers at most (``_fold_changes``; tests take each way).
_SORTED_KEYS, _RADIX_GROUPS = 256, 1 << 16
_LOOKED_UP = 256  # leaders below this id: their availability read from a table by id (``_flags``)
_REGISTRY_MAX = 1 << 18  # partitions and ISRs named by number in folds, before the numbers start over
#: A held partition's columns (``_Walker.cols``): its state's leader and ISR (by number), its track's, its
#: replicas, ELR set, topic (by number), epochs, health flags, and the churn its track has not been told yet.
(_LEADER, _ISR, _TRACK_LEADER, _TRACK_ISR, _REPLICAS, _ELR, _TOPIC, _LEADER_EPOCH, _PARTITION_EPOCH) = range(9)
_FLAGS = 9  # the HEALTH flags as bits (``_FLAG_TUPLES``)
_CHURN = slice(_FLAGS + 1, _FLAGS + 5)  # leader changes, shrinks, expands, unclean
#: The partition's open cell, the one its last counted change went to, not yet in its track: bucket index (-1:
#: none), then ``Cell``'s fields in order.
_CELL = slice(_CHURN.stop, _CHURN.stop + 11)
_NO_CELL = (-1,) + (0,) * (_CELL.stop - _CELL.start - 1)
_TRACK_NO = _CELL.stop  # the partition's track, by its number in ``_Cells``
_WIDTH = _TRACK_NO + 1
#: Records whose replay and effect read no partition's state, track or flags but through ``_recheck`` and
#: ``_broker`` (which write back the held partitions they read): held partitions stay held across them. The
#: transaction markers too: no fold runs while a transaction is open (``_stretch``), and each record it holds
#: wrote back what it reads when it came (``add``), so what End applies finds nothing held.
_READS_NO_PARTITION = frozenset({BEGIN, END, ABORT,
    NO_OP, "CONFIG_RECORD", "REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
    "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "REGISTER_CONTROLLER_RECORD",
    "ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", "CLIENT_QUOTA_RECORD",
    "USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", "DELEGATION_TOKEN_RECORD",
    "REMOVE_DELEGATION_TOKEN_RECORD", "FEATURE_LEVEL_RECORD", "ZK_MIGRATION_STATE_RECORD", "PRODUCER_IDS_RECORD",
    "LEADER_CHANGE", "KRAFT_VOTERS", "KRAFT_VERSION"})
_TOPIC_KINDS = frozenset({"TOPIC_RECORD", "REMOVE_TOPIC_RECORD"})  # they replace or drop a topic's partitions
#: Records that leave what ``min_isr`` reads (configs, topic names) as it was: the min ISRs known stay known across
#: them (any other record forgets them: ``_forget_min_isrs_moved_by``). A new epoch's leader may move the node's
#: (``_leader_change``).
_KEEPS_MIN_ISR = _PARTITION_KINDS | (_READS_NO_PARTITION - {"CONFIG_RECORD", END})
_SEEN_MAX = 1 << 15  # decoded records whose kind is remembered across walks
_TOLD = 6  # what ``_Walker._kind`` tells of a record: kind, partition, leader, ISR, passed fields, replicas
_NOT_TAKEN = (_OTHER, -1, 0, -1, -1, -1)  # a record of no fold's kind, as ``_Walker._kind`` tells it
_NOOP_ROW = (_NOOP, *_NOT_TAKEN[1:])
#: Records a fold carries in log order, each through ``_apply`` as ``add`` takes it, counted with the stretch's
#: others: they read and move no partition, broker, epoch leader or min ISR (a config only when not of
#: min.insync.replicas), so the stretch's changes fold the same around them. All of them read no partition.
_ASIDE_TYPES = ("CONFIG_RECORD", "CLIENT_QUOTA_RECORD", "ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
                "USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", "DELEGATION_TOKEN_RECORD",
                "REMOVE_DELEGATION_TOKEN_RECORD", "PRODUCER_IDS_RECORD", "REGISTER_CONTROLLER_RECORD")
_ASIDE = 3  # the first aside's code in ``add_records``' kinds, one per type
_ASIDE_CODES = {name: _ASIDE + i for i, name in enumerate(_ASIDE_TYPES)}
_ASIDE_BY_KEY = {BY_TYPE_NAME[name].api_key: code for name, code in _ASIDE_CODES.items()}  # (``_kind``)
_ASIDE_ROWS = {code: (code, *_NOT_TAKEN[1:]) for code in _ASIDE_CODES.values()}
_NO_OP_KEY, _CONFIG_KEY = BY_TYPE_NAME[NO_OP].api_key, BY_TYPE_NAME["CONFIG_RECORD"].api_key
#: Broker records a fold carries as asides when no partition's health moves at them or reads them before
#: (``_past_brokers``): they leave their broker as available to lead as it was (registered and unfenced, or
#: not), or it leads no partition up to them in the stretch.
_BROKER_CODES = {name: _ASIDE + len(_ASIDE_TYPES) + i for i, name in enumerate(Brokers().handlers())}
#: Records of no fold's own kind that ``_past_brokers`` may carry.
_PAST_KEYS = frozenset(BY_TYPE_NAME[name].api_key for name in _BROKER_CODES)


def collect(source: NodeDir | Log, *, limits: Limits = Limits(), max_buckets: int = MAX_BUCKETS,
            redact: bool = True, apply_invalid: bool = True) -> Timeline:
    """The timeline of a node's log, or of a log assembled from several copies, from where it starts
    on disk (offset 0, or the earliest snapshot the log continues from). Secret config values are
    redacted unless ``redact`` is False; ``apply_invalid=False`` ends the log at a batch failing its CRC."""
    if max_buckets < 1:
        raise ValueError("max_buckets must be at least 1")
    log = as_log(source)
    problems = ReadProblems()
    image, start, described = starting_point(log, None, None, earliest_base(log) or "none", limits, problems)
    where = ", ".join(str(n.metadata_dir or n.log_dir) for n in log.copies)
    single = len(log.copies) == 1
    model = Timeline(where, log.cluster_id, log.node.node_id if single else None,
                     described if single else f"{described}, {log.name}")
    walker = _Walker(model, image, max_buckets, redact)
    with rare_full_collections():  # a replay, as ``replay``'s
        joined: list[Block] = []  # blocks of consecutive offsets, added as one (fewer stretches end at a block's end)
        for entry in log_entries(log, start, limits, problems, apply_invalid, runs="blocks" if FAST_COLUMNS else None):
            if type(entry) is Block:
                if joined and (int(entry.offsets[0]) != joined[-1].last + 1
                               or sum(map(len, joined)) + len(entry) > JOINED_RECORDS):
                    walker.add_records(_joined(joined))
                    joined = []
                joined.append(entry)
                continue
            if joined:
                walker.add_records(_joined(joined))
                joined = []
            walker.add(entry)
        if joined:
            walker.add_records(_joined(joined))
    walker.finish()
    for message in problems.messages + [f"offset {p.offset} {p.type}: {p.message}" for p in image.problems]:
        model.problems.append(message)
    return model




class _Walker:
    """Holds the image and the model while the log goes by; ``add`` is the per-record hot path."""

    def __init__(self, model: Timeline, image: ClusterImage, max_buckets: int, redact: bool) -> None:
        self.model = model
        self.image = image
        self.max_buckets = max_buckets
        self.redact = redact
        self.lo = self.hi = None
        self.epoch: Epoch | None = None
        self.pending: list[tuple[Entry, Any]] = []  # records of an open metadata transaction
        self.topic_names = {tid: t["name"] for tid, t in image.topics.by_id.items()}
        self.seen_names = set(image.topics.id_by_name)
        self.named: dict[str, list[str]] = {}  # topic name -> the topic ids named so (``_forget_min_isrs_moved_by``)
        for tid, name in self.topic_names.items():
            self.named.setdefault(name, []).append(tid)
        self.topic_partitions: dict[str, list[tuple[str, int]]] = {}
        self.removed: set[tuple[str, int]] = set()  # removed partitions still in the model
        self.broker_states: dict[int, str] = {}
        self.health: dict[tuple[str, int], tuple[bool, ...]] = {}  # partition -> its HEALTH flags
        self.health_counts: Health = (0,) * len(HEALTH)
        self.led: dict[int, set[tuple[str, int]]] = {}  # broker -> partitions it leads
        self.leader_of: dict[tuple[str, int], int] = {}
        self.health_moved = False  # since the last record
        self.entry: Entry | None = None  # the record being added, and its bucket
        self.entry_bucket: Bucket | None = None
        self.min_isrs: dict[str, int] = {}  # topic id -> min ISR, until a record that may move it
        self.node_min_isr: int | None = None  # that of a topic with no config of its own, as long
        self.min_isr_era = 0  # one more each time ``min_isrs`` is forgotten
        self.topic_min_isr = np.zeros((0, 2), np.int64)  # topic number -> min ISR and the era it is of
        self.values: list | None = None  # the walk whose values ``value_kinds`` describes
        self.value_kinds = np.zeros((_TOLD, 0), np.int64)  # of the values of ``values``: ``_Told.rows``' columns
        self.told = _Told()  # the kinds of records told before
        self.key_codes: dict[tuple[str, int], int] = {}  # partition -> its number in folds
        self.keys: list[tuple[str, int]] = []
        self.isr_codes: dict[tuple[int, ...], int] = {}  # ISR -> its number in folds
        self.isrs: list[tuple[int, ...]] = []
        self.isr_sizes = np.zeros(0, np.int64)
        self.isr_masks = np.zeros(0, np.int64)
        self.isr_moves: dict[tuple[int, int], tuple[bool, bool]] = {}  # (old, new ISR) -> shrank, grew
        self.skipped: set[int] = set()  # partitions a fold cannot take until the next record added
        self.passed: list[dict] = []  # a taken change's ``columns.PASSED`` fields, by number
        self.passed_state: dict[int, dict] = {}  # held partition -> its state after the passed fields folded
        self.flips: list[tuple[int, int]] = []  # the stretch's broker records moving availability: place, broker
        self.rechecks: tuple[np.ndarray, np.ndarray] | None = None  # the stretch's partitions rechecked at them:
        # place in the stretch, partition number (``_flip_rows``)
        self.folding = False  # while a fold applies its asides (their rechecks are the fold's: ``_broker``)
        # Partitions a fold changed hold their state in ``cols`` (by number) until a record that reads it
        # comes (``_release``): the image's state, the track's leader, ISR and churn, ``health`` and
        # ``leader_of`` are written back then, not after each stretch.
        # ``cols`` has a row (slot) per partition held at once, not per partition named: a log's topic churn
        # does not grow it.
        self.cols = np.zeros((0, _WIDTH), np.int64)
        self.slot_of = np.zeros(0, np.int64)  # partition number -> its row in ``cols`` (-1: not held)
        self.key_marks = np.zeros(0, bool)  # by partition number (``_distinct_keys``)
        self.key_group = np.zeros(0, np.int64)  # by partition number: its group in ``_fold_changes``
        self.code_of = np.zeros(0, np.int64)  # row of ``cols`` -> the partition held there (-1: free)
        self.slot_held = np.empty(0, object)  # row of ``cols`` -> the ``held`` entry of the partition held there
        self.free: list[int] = []
        self.held: dict[int, tuple] = {}  # number -> (key, its topic's partitions, its state when held, track,
        # its leader in ``leader_of``)
        self.held_led: dict[int, int] = {}  # broker -> held partitions it leads in ``leader_of``
        self.cells = Cells(model.partitions)
        self.topic_codes: dict[str, int] = {}  # topic id -> its number in ``cols``
        self.topic_ids: list[str] = []
        model.start_topics = len(self.topic_names)
        model.start_metadata_version = image.features.levels.get(METADATA_VERSION)
        for tid, topic in image.topics.by_id.items():
            for pid, part in topic["partitions"].items():
                self._track(tid, pid, part, None)
        for bid, registration in image.brokers.registrations.items():
            model.brokers[bid] = BrokerLane(broker_state(registration), Capped(LANE_EVENTS))
        self._recheck(self._all_partitions())
        model.start_health = self.shown_health = self.health_counts
        self.health_moved = False
        self.before: dict[str, Callable[[dict], Any]] = {
            "CONFIG_RECORD": self._old_config,
            "REMOVE_TOPIC_RECORD": lambda d: self.topic_names.get(d["topicId"]),
            "FEATURE_LEVEL_RECORD": lambda d: image.features.levels.get(d["name"]),
            "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": lambda d: image.acls.entries.get(d["id"]),
        }
        self.effects: dict[str, Callable[[Entry, dict, Any], None]] = {
            "PARTITION_RECORD": self._partition,
            "PARTITION_CHANGE_RECORD": self._partition,
            "TOPIC_RECORD": self._topic,
            "REMOVE_TOPIC_RECORD": self._remove_topic,
            "REGISTER_BROKER_RECORD": self._broker,
            "UNREGISTER_BROKER_RECORD": self._broker,
            "FENCE_BROKER_RECORD": self._broker,
            "UNFENCE_BROKER_RECORD": self._broker,
            "BROKER_REGISTRATION_CHANGE_RECORD": self._broker,
            "REGISTER_CONTROLLER_RECORD": self._controller,
            "CONFIG_RECORD": self._config,
            "ACCESS_CONTROL_ENTRY_RECORD": self._acl,
            "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": self._acl,
            "CLIENT_QUOTA_RECORD": self._quota,
            "USER_SCRAM_CREDENTIAL_RECORD": self._scram,
            "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": self._scram,
            "DELEGATION_TOKEN_RECORD": self._token,
            "REMOVE_DELEGATION_TOKEN_RECORD": self._token,
            "FEATURE_LEVEL_RECORD": self._feature,
            "ZK_MIGRATION_STATE_RECORD": self._zk_migration,
            "CLEAR_ELR_RECORD": self._clear_elr,
        }
        self.raft = {"LEADER_CHANGE": self._leader_change, "KRAFT_VOTERS": self._voters,
                     "KRAFT_VERSION": self._kraft_version}

    # -- the walk -------------------------------------------------------------------------------

    def add(self, e: Entry) -> None:
        rec, model = e.record, self.model
        if (FAST_NOOPS and is_no_op(rec) and self.epoch is not None and e.epoch <= self.epoch.epoch
                and self.image.pass_over(e.offset, e.timestamp, e.epoch)):
            # three quarters of a quiet log: counted, and nothing else (no effect, no event, no epoch)
            model.records += 1
            model.type_totals[NO_OP] += 1
            model.last_offset = e.offset
            self._count(e.timestamp, e.offset, NO_OP)
            return
        kind = rec.type
        if self.held:
            self._release_read_by(rec, kind)
        model.records += 1
        model.type_totals[kind] += 1
        if model.first_offset is None:
            model.first_offset = e.offset
        model.last_offset = e.offset
        self.entry, self.entry_bucket = e, self._count(e.timestamp, e.offset, kind)
        if self.epoch is None or e.epoch > self.epoch.epoch:
            node = self._node_min_isr()
            self.epoch = Epoch(e.epoch, e.offset, e.timestamp)
            model.epochs.append(self.epoch)
            if self._node_min_isr() != node:  # the new epoch's leader is not known yet
                self._forget_min_isrs()
        image = self.image
        if kind in _PARTITION_KINDS and image.transaction is None and rec.error is None:
            image.apply(rec, e.offset, e.timestamp, e.epoch)  # the general way below, in fewer steps
            self._partition(e, rec.data, None)
        else:
            self._forget_min_isrs_moved_by(rec, kind)  # it may move a config min ISR comes from
            self._apply(e, kind)
        if self.health_moved:
            self._health_moved(e)

    def _apply(self, e: Entry, kind: str) -> None:
        """Replay the record, then take its effect on the model (held while a transaction is open)."""
        rec = e.record
        decoded = rec.error is None
        before = self.before.get(kind)
        old = before(rec.data) if before is not None and decoded else None
        self.image.apply(rec, e.offset, e.timestamp, e.epoch)
        if not decoded:
            return
        if (raft := self.raft.get(kind)) is not None:
            raft(e, rec.data)
        elif self.image.transaction is not None:
            if kind in self.effects:
                self.pending.append((e, old))
        elif kind == END:
            for held, held_old in self.pending:
                self.effects[held.record.type](held, held.record.data, held_old)
            self.pending.clear()
        elif kind == ABORT:
            self.model.aborted_records += len(self.pending)
            self.pending.clear()
        elif (effect := self.effects.get(kind)) is not None:
            effect(e, rec.data, old)

    # -- records as columns --------------------------------------------------------------------

    def add_records(self, run: Block) -> None:
        """``add`` of each record of the run: stretches of NoOps and of the PartitionChangeRecords
        ``columns`` takes, outside a transaction, below a new epoch and within the buckets' span, are
        folded at once (``_fold``); any other record goes through ``add``."""
        kind, key, leader, isr, passed, replicas = self._kinds(run)
        a, n = 0, len(run)
        stops: dict[int, np.ndarray] = {}
        decoded, kv = run.decoded, run.kv
        while a < n:
            if kind[a] == _OTHER and (type(rec := decoded[kv[a]]) is not MetadataRecord or rec.api_key not in _PAST_KEYS):
                z = a  # (what ``_stretch`` finds for a record of no fold but a broker's)
            else:
                z, held = self._stretch(run, a, kind, key, leader, passed, stops)
            if z > a:
                self._fold(run, a, z, kind[a:z], key[a:z], leader[a:z], isr[a:z], replicas[a:z], held)
                a = z
                continue
            self.add(run.entry(a))
            self.skipped.clear()
            a += 1

    def _kinds(self, run: Block) -> tuple[np.ndarray, ...]:
        """Per record: its kind, and for a PartitionChangeRecord the fold takes, its partition's number,
        its leader (-2: unchanged), its ISR's number (-1: unchanged), its passed fields' (-1: none) and its
        replicas' count (-1: unchanged); each value of a walk told once."""
        if run.decoded is not self.values:
            if max(len(self.keys), len(self.isrs), len(self.topic_ids), len(self.passed)) > _REGISTRY_MAX:
                self._release_all()
                self.passed = []
                self.key_codes, self.keys, self.isr_codes, self.isrs, self.isr_moves = {}, [], {}, [], {}
                self.topic_codes, self.topic_ids = {}, []
                self.topic_min_isr = np.zeros((0, 2), np.int64)
                self.isr_sizes = self.isr_masks = np.zeros(0, np.int64)
                self.skipped.clear()
                self.told = _Told()
            self.values = run.decoded
            self.value_kinds = np.ascontiguousarray(self.told.kinds(run.decoded, self._kind).T)
        kv = run.kv
        return tuple(row[kv] for row in self.value_kinds)  # (row by row: a 2-d take costs several times more)

    def _kind(self, rec: Any) -> tuple[int, ...]:
        """A record's row of ``_Told.rows``."""
        if type(rec) is not MetadataRecord or rec.error is not None:  # (None: a walk's value no record names)
            return _NOT_TAKEN
        api_key = rec.api_key
        if api_key == _NO_OP_KEY:
            return _NOOP_ROW if FAST_NOOPS else _NOT_TAKEN
        if (aside := _ASIDE_BY_KEY.get(api_key)) is not None:
            return _ASIDE_ROWS[aside] if api_key != _CONFIG_KEY or rec.data.get("name") != MIN_ISR else _NOT_TAKEN
        change = change_of(rec)
        if change is None:
            return _NOT_TAKEN
        key, leader, isr, passed = change
        passed_code = replicas = -1
        if passed is not None:
            if not FAST_PASSED:
                return _NOT_TAKEN
            if COUNTED in passed:
                if not FOLDED_REPLICAS:
                    return _NOT_TAKEN
                if (given := passed[COUNTED]) is not None:
                    replicas = len(given)
            passed_code = len(self.passed)
            self.passed.append(passed)
        code = self.key_codes.get(key)
        if code is None:
            code = self.key_codes[key] = len(self.keys)
            self.keys.append(key)
        if isr is None:
            return _CHANGE, code, leader, -1, passed_code, replicas
        isr_code = self.isr_codes.get(isr)
        return _CHANGE, code, leader, self._isr_code(isr) if isr_code is None else isr_code, passed_code, replicas

    def _isr_code(self, isr: tuple[int, ...]) -> int:
        code = self.isr_codes.get(isr)
        if code is None:
            code = self.isr_codes[isr] = len(self.isrs)
            self.isrs.append(isr)
        return code

    def _isr_sizes(self) -> np.ndarray:
        """The size of each numbered ISR."""
        if len(self.isr_sizes) < len(self.isrs):
            self.isr_sizes = np.append(self.isr_sizes, [len(i) for i in self.isrs[len(self.isr_sizes):]]).astype(np.int64)
        return self.isr_sizes

    def _isr_masks(self) -> np.ndarray:
        """Each numbered ISR as a set of brokers in bits (broker b: bit b), -1 for one holding a broker
        outside 0.._MASK_BITS-1 (``_isr_moves_of`` and ``_isr_holds`` take such ISRs as sets)."""
        if len(self.isr_masks) < len(self.isrs):
            new = [sum(1 << b for b in set(i)) if all(0 <= b < _MASK_BITS for b in i) else -1
                   for i in self.isrs[len(self.isr_masks):]]
            self.isr_masks = np.append(self.isr_masks, np.asarray(new, np.int64))
        return self.isr_masks

    def _stretch(self, run: Block, a: int, kind: np.ndarray, key: np.ndarray, leader: np.ndarray, passed: np.ndarray,
                 stops: dict[int, np.ndarray]
                 ) -> tuple[int, np.ndarray | None]:
        """The records from ``a`` up to the first one a fold cannot take (``a``: none), and the partitions
        they change, held (``_hold``), with their passed fields merged (``_merge_passed``). ``stops``: by
        epoch, where the run has records no fold takes below it."""
        self.flips, self.rechecks = [], None
        if self.epoch is None or self.image.transaction is not None:
            return a, None
        epoch = self.epoch.epoch
        stop = stops.get(epoch)
        if stop is None:
            found = ((kind[a:] == _OTHER) | (run.epochs[a:] > epoch)).nonzero()[0]  # (from ``a``: the least an
            stop = stops[epoch] = np.append(found + a, len(kind))  # epoch's calls are given, its first's)
        z = self._past_brokers(run, a, int(stop[np.searchsorted(stop, a)]), stop, kind, leader)
        if z == a:  # a record no fold takes (most calls: one per such record)
            return a, None
        while True:
            if self.skipped:
                ok = ~np.isin(key[a:z], list(self.skipped))
                z = z if ok.all() else a + int(np.argmin(ok))
            z = self._unwidened(run.timestamps, a, z)
            if z == a:
                return a, None
            held = self._hold(key[a:z][kind[a:z] == _CHANGE])
            if held is not None:
                if self.flips and self.flips[0][0] < z and (end := self._flip_rows(a, z, kind, key, leader)) < z:
                    if end == a:
                        return a, None
                    z, held = end, self._hold(key[a:end][kind[a:end] == _CHANGE])  # (held already)
                cut = self._merge_passed(key, passed, a, z)
                if cut == a:
                    return a, None
                if self.rechecks is not None:
                    mine = self.rechecks[0] < cut - a
                    self.rechecks = self.rechecks[0][mine], self.rechecks[1][mine]
                    # (held already, each of them)
                    return cut, self._hold(np.concatenate([key[a:cut][kind[a:cut] == _CHANGE], self.rechecks[1]]))
                if cut == z:
                    return z, held
                return cut, self._hold(key[a:cut][kind[a:cut] == _CHANGE])

    def _flip_rows(self, a: int, z: int, kind: np.ndarray, key: np.ndarray, leader: np.ndarray) -> int:
        """For each broker record from ``a`` to ``z`` that moves its broker's availability (``flips``), the
        partitions its broker may lead where it comes, held, in ``rechecks``: those it led when the stretch began
        (held or written back) and those a change before it elects. The end: the first such record when one
        cannot be held or its track does not follow its state (a fold's recheck neither moves nor reads a track)."""
        flips = [(p, b) for p, b in self.flips if p < z]
        places, codes = [], []
        held_rows = self.code_of >= 0
        held_codes, held_leaders = self.code_of[held_rows], self.cols[held_rows, _LEADER]
        changes = a + np.flatnonzero(kind[a:flips[-1][0] if flips else a] == _CHANGE)  # (up to the last flip)
        change_keys, change_leaders = key[changes], leader[changes]
        for p, b in flips:
            before = int(np.searchsorted(changes, p))  # the changes before it
            mine = [held_codes[held_leaders == b], change_keys[:before][change_leaders[:before] == b]]
            led = self.led.get(b, ())
            if len(led) > self.held_led.get(b, 0):  # some written back (those held: in ``cols``)
                numbered = list(map(self.key_codes.get, led))
                if None in numbered:
                    for i, k in enumerate(led):
                        if numbered[i] is None:
                            numbered[i] = self.key_codes[k] = len(self.keys)
                            self.keys.append(k)
                mine.append(np.asarray(numbered, np.int64))
            mine = _distinct(np.concatenate(mine))
            places.append(np.full(len(mine), p - a, np.int64))
            codes.append(mine)
        numbers = np.concatenate(codes)
        if len(numbers):
            if self._hold(numbers) is None:
                return flips[0][0]
            rows = self.cols[self.slot_of[numbers]]
            if ((rows[:, _TRACK_LEADER] != rows[:, _LEADER]) | (rows[:, _TRACK_ISR] != rows[:, _ISR])).any():
                return flips[0][0]
            self.rechecks = np.concatenate(places), numbers
        return z

    def _merge_passed(self, key: np.ndarray, passed: np.ndarray, a: int, z: int) -> int:
        """``merge_partition`` of the passed fields of records ``a``..``z`` (held partitions), each on its
        partition's state after those before it, kept in ``passed_state`` up to the first it refuses (the
        end: ``add`` takes that one, and the problem is its own); the end."""
        rows = np.flatnonzero(passed[a:z] >= 0)
        if not len(rows):
            return z
        states = {}
        for i in (rows + a).tolist():
            code = int(key[i])
            state = states.get(code) or self.passed_state.get(code) or self.held[code][2]
            try:
                states[code] = merge_partition(state, self.passed[passed[i]])
            except REFUSALS:  # refused or malformed: ``add`` takes it, and the problem is its own
                z = i
                break
        self.passed_state.update(states)
        return z

    def _past_brokers(self, run: Block, a: int, z: int, stop: np.ndarray, kind: np.ndarray, leader: np.ndarray
                      ) -> int:
        """The stretch from ``a`` ended at ``z`` moved past the broker records there that leave their broker as
        available to lead as it was (told by replaying them in turn on copies of their registrations,
        ``state.brokers``' own handlers), or whose broker leads no partition from ``a`` up to them (none held or
        written back, none made its leader by a change before them), each marked in ``kind`` as an aside: the
        flags the fold gives before them do not read the broker, and those after read it as they leave it. Any
        that fails to replay ends the stretch. With ``FOLDED_FLIPS`` one that moves its broker's availability is
        carried too, noted in ``flips`` (``_flip_rows``)."""
        scratch: Brokers | None = None
        while z < len(kind) and run.epochs[z] <= self.epoch.epoch:
            rec = run.decoded[run.kv[z]]
            code = _BROKER_CODES.get(rec.type) if type(rec) is MetadataRecord and rec.error is None else None
            if code is None:
                break
            if scratch is None:
                scratch = Brokers()
                scratch.registrations = {b: dict(r) for b, r in self.image.brokers.registrations.items()}
                handlers = scratch.handlers()
            bid = rec.data.get("brokerId", rec.data.get("id"))
            was = _unavailable(scratch.registrations.get(bid))  # (the handlers change a registration in place)
            try:
                handlers[rec.type](rec.data)
            except REFUSALS:  # refused or malformed: ``add`` takes it, and the problem is its own
                break
            if _unavailable(scratch.registrations.get(bid)) != was:
                if FOLDED_FLIPS:
                    self.flips.append((z, bid))
                elif self._may_lead(bid, leader[a:z][kind[a:z] == _CHANGE]):
                    break
            kind[z] = code
            z = int(stop[np.searchsorted(stop, z + 1)])
        return z

    def _may_lead(self, broker: int, elected: np.ndarray) -> bool:
        """Whether the broker leads a partition now (held or written back) or is among the ``elected`` leaders."""
        if (elected == broker).any():
            return True
        if len(self.led.get(broker, ())) > self.held_led.get(broker, 0):  # one it leads is not held
            return True
        return bool((self.cols[self.code_of >= 0, _LEADER] == broker).any())

    def _unwidened(self, timestamps: np.ndarray, a: int, z: int) -> int:
        """The end of the records from ``a`` (before ``z``) that fit the buckets as they are: the first
        that would widen them is counted by ``add``."""
        ts = timestamps[a:z]
        timed = ts > 0
        if not timed.any():
            return z
        slot = ts // self.model.width
        if self.lo is not None and timed.all() and (
                max(self.hi, int(slot.max())) - min(self.lo, int(slot.min())) < self.max_buckets):
            return z  # most stretches: all within the span (what the running bounds below find then)
        first = int(slot[int(np.argmax(timed))])
        lo = np.minimum.accumulate(np.where(timed, slot, first))
        hi = np.maximum.accumulate(np.where(timed, slot, first))
        if self.lo is not None:
            lo, hi = np.minimum(lo, self.lo), np.maximum(hi, self.hi)
        wide = hi - lo >= self.max_buckets
        return a + int(np.argmax(wide)) if wide.any() else z

    def _hold(self, keys: np.ndarray) -> np.ndarray | None:
        """The partitions the records change, by number ascending, each held in ``cols`` (those not yet held
        read from the image, the track and ``health``); None (the partitions noted in ``skipped``) when one
        has no state, track or flags, as ``_partition`` then takes another way."""
        codes = self._distinct_keys(keys)
        if len(self.slot_of) < len(self.keys):
            self.slot_of = np.concatenate([self.slot_of, np.full(max(len(self.keys), 1024), -1, np.int64)])
        new = codes[self.slot_of[codes] < 0].tolist()
        if not new:
            return codes
        names, by_id, tracks, health, isr_codes = self.keys, self.image.topics.by_id, self.model.partitions, \
            self.health, self.isr_codes
        taken, rows = [], []
        for code in new:
            key = names[code]
            tid = key[0]
            topic = by_id.get(tid)
            partitions = topic["partitions"] if topic is not None else {}
            part = partitions.get(key[1])
            track = tracks.get(key)
            old = health.get(key)
            if part is None or track is None or track.removed_time is not None or old is None:
                self.skipped.add(code)
                continue
            isr = tuple(part["isr"])
            isr_code = isr_codes.get(isr)
            track_isr = isr_code if track.isr == isr else isr_codes.get(track.isr)
            topic_code = self.topic_codes.get(tid)
            if topic_code is None:
                topic_code = self.topic_codes[tid] = len(self.topic_ids)
                self.topic_ids.append(tid)
            led_by = self.leader_of.get(key)  # (as it stays while held: what moves it writes it back first)
            if led_by is not None:
                self.held_led[led_by] = self.held_led.get(led_by, 0) + 1
            self.held[code] = (key, partitions, part, track, led_by)
            taken.append(code)
            rows.append((part["leader"], self._isr_code(isr) if isr_code is None else isr_code, track.leader,
                         self._isr_code(track.isr) if track_isr is None else track_isr, len(part["replicas"]),
                         bool(part["eligibleLeaderReplicas"]), topic_code, part[LEADER_EPOCH], part[PARTITION_EPOCH],
                         _FLAG_NUMBERS[old], 0, 0, 0, 0, *_NO_CELL, self.cells.number(track)))
        if taken:
            while len(self.free) < len(taken):
                grown = max(len(self.cols), 256)
                self.free += range(len(self.cols) + grown - 1, len(self.cols) - 1, -1)
                self.cols = np.concatenate([self.cols, np.zeros((grown, _WIDTH), np.int64)])
                self.code_of = np.concatenate([self.code_of, np.full(grown, -1, np.int64)])
                self.slot_held = np.concatenate([self.slot_held, np.empty(grown, object)])
            slots = [self.free.pop() for _ in taken]
            self.cols[slots] = rows
            self.slot_of[taken] = slots
            self.code_of[slots] = taken
            for slot, code in zip(slots, taken, strict=True):
                self.slot_held[slot] = self.held[code]
        return codes if len(taken) == len(new) else None

    def _distinct_keys(self, keys: np.ndarray) -> np.ndarray:
        """``_distinct`` of partition numbers; many are marked in a table by number instead of sorted (a sort costs
        more per number than a pass over the table once they are more than a few hundred)."""
        if len(keys) <= _SORTED_KEYS + len(self.keys) // 128:
            return _distinct(keys)
        marks = self.key_marks
        if len(marks) < len(self.keys):
            marks = self.key_marks = np.zeros(2 * len(self.keys), bool)
        marks[keys] = True
        codes = np.flatnonzero(marks)
        marks[codes] = False  # (all False between calls)
        return codes

    def _release(self, codes: list[int]) -> None:
        """Write the held partitions back (the image's state, the track, ``leader_of`` and ``health``), as
        ``_partition`` would have left them, and hold them no more."""
        if not codes:
            return
        isrs, health, held, leader_of, passed_state = self.isrs, self.health, self.held, self.leader_of, self.passed_state
        slots = self.slot_of[codes]
        self._close_cells(codes)
        for code, row in zip(codes, self.cols[slots].tolist(), strict=True):
            key, partitions, part, track, led_by = held.pop(code)
            if led_by is not None:
                self.held_led[led_by] -= 1
            leader = row[_LEADER]
            if row[_PARTITION_EPOCH] != part[PARTITION_EPOCH]:  # every record the fold takes bumps it
                new = dict(part)
                new["leader"], new[LEADER_EPOCH], new[PARTITION_EPOCH] = leader, row[_LEADER_EPOCH], row[_PARTITION_EPOCH]
                new["isr"] = list(isrs[row[_ISR]])
                if (merged := passed_state.pop(code, None)) is not None:
                    new.update((state, merged[state]) for state in PASSED_STATES)
                partitions[key[1]] = new
            track.replicas = row[_REPLICAS]
            track.leader, track.isr = row[_TRACK_LEADER], isrs[row[_TRACK_ISR]]
            moved, shrank, grew, unclean = row[_CHURN]
            track.leader_changes += moved
            track.shrinks += shrank
            track.expands += grew
            track.unclean += unclean
            if leader_of.get(key) != leader:
                self._lead(key, leader)
            health[key] = _FLAG_TUPLES[row[_FLAGS]]
        self.slot_of[codes] = self.code_of[slots] = -1
        self.free += slots.tolist()

    def _release_all(self) -> None:
        self._release(list(self.held))

    def _release_read_by(self, rec: Any, kind: str) -> None:
        """Write back the held partitions ``rec``'s replay and effect may read: its own partition, its topic's,
        none (``_READS_NO_PARTITION``), or all of them for any other record."""
        if rec.error is None:
            if kind in _READS_NO_PARTITION:
                return
            if type(rec) is MetadataRecord and kind in _PARTITION_KINDS:
                self._release_keys([(rec.data.get("topicId"), rec.data.get("partitionId"))])
                return
            if type(rec) is MetadataRecord and kind in _TOPIC_KINDS:
                topic_code = self.topic_codes.get(rec.data.get("topicId"))
                if topic_code is not None:
                    self._release_where(self.cols[:, _TOPIC] == topic_code)
                return
        self._release_all()

    def _release_where(self, rows: np.ndarray) -> None:
        """Write back the held partitions whose ``cols`` rows are marked."""
        self._release(self.code_of[rows & (self.code_of >= 0)].tolist())

    def _release_keys(self, keys) -> None:
        codes, held = self.key_codes, self.held
        self._release([c for k in keys if (c := codes.get(k)) is not None and c in held])

    def _fold(self, run: Block, a: int, z: int, kind: np.ndarray, key: np.ndarray, leader: np.ndarray,
              isr: np.ndarray, replicas: np.ndarray, held: np.ndarray) -> None:
        """``add`` of records ``a``..``z`` of the run, NoOps and taken PartitionChangeRecords outside a
        transaction, below the epoch and within the buckets' span: the counts, the image, the tracks,
        cells, events and health they move, the same as record by record."""
        model, image = self.model, self.image
        offsets, ts, epochs = run.offsets[a:z], run.timestamps[a:z], run.epochs[a:z]
        n = z - a
        model.records += n
        model.last_offset = int(offsets[-1])
        _tally(model.type_totals, kind)
        timed = ts > 0
        model.untimed += n - int(timed.sum())
        slot = np.where(timed, ts // model.width, -1)
        buckets = self._fold_buckets(slot, kind, offsets)
        registrations = self.image.brokers.registrations
        flipped: dict[int, tuple[list[int], list[bool]]] = {}  # broker -> where its availability moved, and to what
        moves: list[tuple[int, tuple]] = []  # where an aside moved the health counts, and by what
        start_counts = self.health_counts
        self.folding = True  # (its rechecks at broker records: ``rechecks``)
        try:
            for i in np.flatnonzero(kind >= _ASIDE).tolist():  # in log order, each as ``add`` takes it
                e = run.entry(a + i)
                rec = e.record
                bid = rec.data.get("brokerId", rec.data.get("id")) if rec.type in _BROKER_CODES else None
                was = bid is not None and _unavailable(registrations.get(bid))
                self._forget_min_isrs_moved_by(rec, rec.type)
                counts = self.health_counts
                self._apply(e, rec.type)
                if self.health_counts != counts:
                    moves.append((i, tuple(map(operator.sub, self.health_counts, counts))))
                if bid is not None and (now := _unavailable(registrations.get(bid))) != was:
                    places, states = flipped.setdefault(bid, ([], [was]))
                    places.append(i)
                    states.append(now)
        finally:
            self.folding = False
        self.health_counts, self.health_moved = start_counts, False  # (the fold counts them where they come)
        image.pass_over_run(offsets, ts, epochs)  # outside a transaction (``_stretch``); the last record's
        rows = np.flatnonzero(kind == _CHANGE)
        real = None
        if self.rechecks is not None and len(self.rechecks[0]):  # the rechecks as changes that set nothing
            places, codes = self.rechecks
            rows, by = np.concatenate([rows, places]), np.concatenate([key[rows], codes])
            at = rows.argsort(kind="stable")
            rows, by = rows[at], by[at]
            real = (kind[rows] == _CHANGE)
            given_leader = np.where(real, leader[rows], NO_LEADER_CHANGE)
            given_isr = np.where(real, isr[rows], -1)
            given_replicas = np.where(real, replicas[rows], -1)
        else:
            by, given_leader, given_isr, given_replicas = key[rows], leader[rows], isr[rows], replicas[rows]
        at, deltas = self._fold_changes(rows, offsets, ts, slot, by, given_leader, given_isr, given_replicas, held,
                                        buckets, real, flipped) if len(rows) else (rows, np.zeros((0, len(HEALTH)), np.int64))
        if moves:
            at = np.concatenate([at, [i for i, _ in moves]])
            deltas = np.concatenate([deltas, np.asarray([d for _, d in moves], np.int64).reshape(-1, len(HEALTH))])
            by_place = at.argsort(kind="stable")
            at, deltas = at[by_place], deltas[by_place]
        self._fold_health(at, deltas, offsets, ts, slot, buckets)

    def _fold_buckets(self, slot: np.ndarray, kind: np.ndarray, offsets: np.ndarray) -> dict[int, Bucket]:
        """``_count`` of each timed record: its bucket's records, types and last offset (buckets made in
        the order their first records come); the buckets by slot."""
        timed = np.flatnonzero(slot >= 0)
        if not len(timed):
            return {}
        timed_slots = slot[timed]
        if (timed_slots == timed_slots[0]).all():  # most stretches: one bucket
            idx = int(timed_slots[0])
            out = {idx: self._fold_bucket(idx, int(offsets[timed[0]]), len(timed), int(offsets[timed[-1]]),
                                          kind[timed])}
            slots = timed_slots[:1]
        else:
            slots, first, inverse, counts = np.unique(timed_slots, return_index=True, return_inverse=True,
                                                      return_counts=True)
            inverse = inverse.ravel()
            last = np.zeros(len(slots), np.int64)
            np.maximum.at(last, inverse, timed)
            out = {}
            for j in np.argsort(first, kind="stable").tolist():
                idx = int(slots[j])
                out[idx] = self._fold_bucket(idx, int(offsets[timed[first[j]]]), int(counts[j]), int(offsets[last[j]]),
                                             kind[timed[inverse == j]])
        self.lo = int(slots[0]) if self.lo is None else min(self.lo, int(slots[0]))
        self.hi = int(slots[-1]) if self.hi is None else max(self.hi, int(slots[-1]))
        return out

    def _fold_bucket(self, idx: int, first_offset: int, records: int, last_offset: int, kinds: np.ndarray) -> Bucket:
        """``_count`` of a fold's records in bucket ``idx`` (made at the first one's offset if new)."""
        bucket = self.model.buckets.get(idx)
        if bucket is None:
            bucket = self.model.buckets[idx] = Bucket(first_offset, 0)
        bucket.records += records
        bucket.last_offset = last_offset
        _tally(bucket.types, kinds)
        return bucket

    def _fold_changes(self, rows: np.ndarray, offsets: np.ndarray, ts: np.ndarray, slot: np.ndarray, key: np.ndarray,
                      leader: np.ndarray, isr: np.ndarray, replicas: np.ndarray, held: np.ndarray,
                      buckets: dict[int, Bucket], real: np.ndarray | None = None,
                      flipped: dict[int, tuple[list[int], list[bool]]] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``image.apply`` and ``_partition`` of each PartitionChangeRecord at ``rows`` (positions in the
        stretch), grouped by partition (``held``: their numbers, ascending): each field carried forward from
        the partition's state held in ``cols`` (``merge_partition``; ``replicas``: a count, -1 unchanged), the
        track's leader and ISR before each
        record, its health flags after; ``cols`` left as the last record leaves the partition. Rows not ``real``
        are a broker record's recheck of the partition (``_flip_rows``): it sets nothing, and its flags read the
        broker as the record leaves it; ``flipped``: the brokers whose availability moves in the stretch, where
        and to what (the first: as it was). The rows that moved their partition's flags, and by what (log order)."""
        if len(held) < _RADIX_GROUPS:  # (a stable sort of 16-bit numbers is a radix sort: no comparisons)
            if len(self.key_group) < len(self.keys):
                self.key_group = np.zeros(2 * len(self.keys), np.int64)
            self.key_group[held] = np.arange(len(held))
            order = self.key_group[key].astype(np.uint16).argsort(kind="stable")  # by partition, each in log order
        else:
            order = key.argsort(kind="stable")
        m = len(order)
        codes = key[order]
        head = np.empty(m, bool)
        head[0] = True
        np.not_equal(codes[1:], codes[:-1], out=head[1:])
        group = head.cumsum()
        group -= 1  # the partition's index in ``held``
        starts = head.nonzero()[0]
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:] - 1
        ends[-1] = m - 1
        slots = self.slot_of[held]
        numbers = self.cols[slots]
        (seed_leader, seed_isr, track_leader, track_isr, seed_replicas, elr, topic, leader_epoch,
         partition_epoch) = numbers[:, :_FLAGS].T
        new_leader, leader_set = _carried(leader[order], NO_LEADER_CHANGE, head, group, seed_leader)
        new_isr, _ = _carried(isr[order], -1, head, group, seed_isr)
        # replica counts (a reassignment's, set as ``merge_partition`` of its replicas sets them: ``_merge_passed``)
        new_replicas = _carried(replicas[order], -1, head, group, seed_replicas)[0] if (replicas >= 0).any() \
            else seed_replicas[group]
        was_leader = np.empty(m, np.int64)
        was_leader[1:] = new_leader[:-1]
        was_leader[starts] = track_leader
        was_isr = np.empty(m, np.int64)
        was_isr[1:] = new_isr[:-1]
        was_isr[starts] = track_isr
        # health flags after each record (``_set_health``), and before it
        sizes = self._isr_sizes()[new_isr]
        flags = self._flags(new_leader, sizes, topic[group], new_replicas, elr[group])
        at = rows[order]  # sorted row -> its place in the stretch
        for broker, (places, states) in (flipped or {}).items():  # as it was where each row comes
            led = (new_leader == broker).nonzero()[0]
            if len(led):
                unavailable = np.asarray(states, np.int64)[np.searchsorted(places, at[led], side="right")]
                flags[led] = (flags[led] & ~2) | (unavailable << 1)  # (bit 1: HEALTH's leader on a fenced broker)
        before = np.empty_like(flags)
        before[1:] = flags[:-1]
        before[starts] = numbers[:, _FLAGS]
        # what the track sees (``_partition``)
        moved = new_leader != was_leader
        changed = moved | (new_isr != was_isr)
        if real is not None:  # (a recheck moves nothing: it sets nothing, and its track follows its state)
            real = real[order]
        shrank, grew = self._isr_moves_of(was_isr, new_isr, changed)
        unclean = ~self._isr_holds(was_isr, new_leader, moved & (new_leader >= 0))
        # the image (``merge_partition`` of each in turn: the last value set, an epoch bump per record)
        bumps = np.cumsum(leader_set)
        epoch_after = bumps - (bumps - leader_set)[starts][group]  # leader epoch bumps up to each record
        churn = np.empty((4, m), np.int64)  # (rows: each contiguous)
        churn[0], churn[1], churn[2], churn[3] = moved, shrank, grew, unclean
        cols = self.cols
        cols[slots, _LEADER] = cols[slots, _TRACK_LEADER] = new_leader[ends]  # the track's too: as it was if
        cols[slots, _ISR] = cols[slots, _TRACK_ISR] = new_isr[ends]  # no record moved it
        cols[slots, _LEADER_EPOCH] = epoch_after[ends] + leader_epoch
        cols[slots, _PARTITION_EPOCH] = (ends - starts + 1 if real is None else np.add.reduceat(real, starts, dtype=np.int64)) + partition_epoch
        cols[slots, _FLAGS] = flags[ends]
        cols[slots, _REPLICAS] = new_replicas[ends]
        cols[slots, _CHURN] += np.add.reduceat(churn, starts, axis=1).T
        self._fold_events(at, moved, was_leader, new_leader, leader_epoch[group] + epoch_after, unclean, offsets, ts,
                          group, held)
        self._fold_cells(at, changed & (slot[at] >= 0), group, slot, offsets, ts, sizes, new_leader, churn, held,
                         buckets)
        sorted_at = np.empty_like(order)  # record (in log order) -> its place sorted
        sorted_at[order] = np.arange(m)
        moved = (flags != before)[sorted_at].nonzero()[0]  # in log order
        at = sorted_at[moved]
        return rows[moved], _FLAG_DELTAS[flags[at], before[at]]

    def _flags(self, leader: np.ndarray, sizes: np.ndarray, topic: np.ndarray, replicas: np.ndarray,
               elr: np.ndarray) -> np.ndarray:
        """``_set_health``'s flags (each a number: ``_FLAG_TUPLES``) of partitions given as columns: leader, ISR
        size, topic (by number), replicas and whether an ELR is set."""
        live = leader >= 0
        registrations = self.image.brokers.registrations
        if len(leader) and int(leader.min()) >= -1 and (top := int(leader.max())) < _LOOKED_UP:  # (most: few brokers)
            # each broker's, by id (no leader: the last, read as available, as ``live`` says it is none)
            table = np.fromiter((_unavailable(registrations.get(b)) for b in range(top + 1)), bool, top + 1)
            unavailable = np.append(table, False)[leader]
        else:
            unavailable = np.zeros(len(leader), bool)
            leaders = _distinct(leader[live]).tolist()
            if leaders:
                fenced = [_unavailable(registrations.get(b)) for b in leaders]
                unavailable[live] = np.asarray(fenced, bool)[np.searchsorted(leaders, leader[live])]
        known, era = self.topic_min_isr, self.min_isr_era
        if len(known) < len(self.topic_ids):
            known = self.topic_min_isr = np.concatenate([known, np.full((len(self.topic_ids), 2), -1, np.int64)])
        stale = known[topic, 1] != era
        if stale.any():
            told = _distinct(topic[stale])
            known[told, 0] = [self._topic_min_isr(self.topic_ids[t]) for t in told.tolist()]
            known[told, 1] = era
        flags = (sizes < replicas) << 3  # (HEALTH's order, as ``_set_health``'s)
        flags |= unavailable << 1
        flags |= (sizes < known[topic, 0]) << 2
        flags |= (elr != 0) << 4
        flags |= ~live
        return flags

    def _recheck_held(self, broker: int) -> None:
        """``_recheck`` of the held partitions ``broker`` leads, in ``cols``."""
        self._recheck_rows(np.flatnonzero((self.code_of >= 0) & (self.cols[:, _LEADER] == broker)))

    def _recheck_rows(self, rows: np.ndarray) -> None:
        """``_recheck`` of held partitions, by their rows in ``cols``."""
        if not len(rows):
            return
        held = self.cols[rows]
        flags = self._flags(held[:, _LEADER], self._isr_sizes()[held[:, _ISR]], held[:, _TOPIC], held[:, _REPLICAS],
                            held[:, _ELR])
        old = held[:, _FLAGS]
        moved = flags != old
        if moved.any():
            delta = _FLAG_DELTAS[flags[moved], old[moved]].sum(axis=0)
            self.health_counts = tuple(map(operator.add, self.health_counts, delta.tolist()))
            self.cols[rows, _FLAGS] = flags
            self.health_moved = True

    def _fold_events(self, at, moved, was, leader, epoch, unclean, offsets, ts, group, held) -> None:
        """The leader changes as ``_partition`` notes them, in log order (only those the model keeps made,
        from copies of their own fields: ``Capped`` may make them later)."""
        moves = at[moved]
        if not len(moves):
            return
        order = np.argsort(moves)
        moves = moves[order]
        picked = [x[moved][order] for x in (was, leader, epoch, unclean)]
        named = self.slot_held[self.slot_of[held[group[moved][order]]]]  # each move's ``held`` entry (a copy)
        picked += [offsets[moves], ts[moves]]

        def events(lo: int, hi: int) -> list[Event]:
            return [Event(o, t, "leader", h[3].name, f"leader {old} -> {new}, leader epoch {le}"
                          f"{' UNCLEAN (not in the old ISR)' if bad else ''}", new, h[0])
                    for old, new, le, bad, o, t, h in zip(*(y[lo:hi].tolist() for y in picked), named[lo:hi],
                                                          strict=True)]

        self.model.leader_events.add_many(len(moves), events)

    def _fold_cells(self, at, counted, group, slot, offsets, ts, sizes, leader, churn, held_codes, buckets) -> None:
        """The churn of each record that moved its track, counted in its bucket and its cell (records of
        one partition and bucket at once): a partition's last cell is kept open in ``cols`` while its
        changes stay in that bucket, so a cell is made once, not once per stretch."""
        sel = counted.nonzero()[0]  # sorted rows, by partition then log order
        if not len(sel):
            return
        where = slot[at[sel]]
        counts = churn[:3, sel]  # leader changes, shrinks, expands
        g = group[sel]
        if (where == where[0]).all():  # most stretches: one bucket (rows then by partition, bucket and log order)
            sums = {int(where[0]): counts.sum(axis=1).tolist()}
        else:
            sums = {idx: counts[:, where == idx].sum(axis=1).tolist() for idx in _distinct(where).tolist()}
            order = np.lexsort((sel, where, g))  # by partition, bucket, then log order
            sel, where, g, counts = sel[order], where[order], g[order], counts[:, order]
        for idx, (moved, shrank, grew) in sums.items():
            bucket = buckets[idx]
            bucket.leader_changes += moved
            bucket.isr_shrinks += shrank
            bucket.isr_expands += grew
        n = len(sel)
        edge = np.empty(n + 1, bool)  # where a (partition, bucket) starts, and the end
        edge[0] = edge[n] = True
        np.not_equal(g[1:], g[:-1], out=edge[1:n])
        edge[1:n] |= where[1:] != where[:-1]
        bounds = edge.nonzero()[0]
        first, last = bounds[:-1], bounds[1:] - 1
        f, z = sel[first], sel[last]
        g, where = g[first], where[first]
        af, az = at[f], at[z]
        cells = np.empty((len(first), _CELL.stop - _CELL.start), np.int64)  # (``_NO_CELL``'s fields)
        cells[:, 0], cells[:, 1], cells[:, 2], cells[:, 3], cells[:, 4] = where, offsets[af], ts[af], offsets[az], ts[az]
        cells[:, 5], cells[:, 6], cells[:, 7] = sizes[z], np.minimum.reduceat(sizes[sel], first), leader[z]
        cells[:, 8:] = np.add.reduceat(counts, first, axis=1).T
        cols, numbers = self.cols, held_codes[g]
        slots = self.slot_of[numbers]
        if ((g[1:] == g[:-1]) & (f[1:] < z[:-1])).any():  # a partition's buckets not one after another in time
            self._close_cells(_distinct(numbers).tolist())
            by_time = np.argsort(f, kind="stable")
            self.cells.put(cols[slots[by_time], _TRACK_NO], cells[by_time])
            return
        # each partition's first cell here goes on with its open one if in the same bucket; the others before its
        # last are put in its track (the open one first); the last stays open
        head = np.empty(len(g) + 1, bool)  # a partition's first cell here (and the end)
        head[0] = head[-1] = True
        np.not_equal(g[1:], g[:-1], out=head[1:-1])
        tail = head[1:]
        start = head[:-1].nonzero()[0]
        opened = cols[slots[start], _CELL.start]
        same = opened == where[start]
        on = start[same]
        if len(on):
            rows = slots[on]
            cells[on, 1:3] = cols[rows, _CELL.start + 1:_CELL.start + 3]
            cells[on, 6] = np.minimum(cells[on, 6], cols[rows, _CELL.start + 6])
            cells[on, 8:] += cols[rows, _CELL.start + 8:_CELL.stop]
        self._close_cells(numbers[start[(opened >= 0) & ~same]].tolist())
        put = (~tail).nonzero()[0]
        self.cells.put(cols[slots[put], _TRACK_NO], cells[put])
        cols[slots[tail], _CELL] = cells[tail]

    def _close_cells(self, codes: list[int]) -> None:
        """Put the open cells of these held partitions in their tracks (``cells``)."""
        cols, slots = self.cols, self.slot_of[codes]
        slots = slots[cols[slots, _CELL.start] >= 0]
        self.cells.put(cols[slots, _TRACK_NO], cols[slots, _CELL])
        cols[slots, _CELL.start] = -1

    def _fold_health(self, at, counts, offsets, ts, slot, buckets) -> None:
        """``_health_moved`` after each record that moved the health counts (``at``: places in the stretch, in log
        order, a record's rows one after another), by ``counts`` (a row each)."""
        if not len(at):
            return
        counts[0] += self.health_counts
        counts.cumsum(axis=0, out=counts)  # after each that moved
        self.health_counts = self.shown_health = tuple(counts[-1].tolist())
        if len(at) > 1 and (at[1:] == at[:-1]).any():  # a record's rows (a broker's rechecks): the counts after all
            last = np.append(at[1:] != at[:-1], True)
            at, counts = at[last], counts[last]
        kept = (offsets[at], ts[at], counts)  # copies: ``Capped`` may make the items later

        def changes(lo: int, hi: int) -> list[tuple[int, int, Health]]:
            return list(zip(*(x[lo:hi].tolist() for x in kept[:2]), map(tuple, kept[2][lo:hi].tolist()), strict=True))

        self.model.health_changes.add_many(len(at), changes)
        where = slot[at]
        for idx in _distinct(where[where >= 0]).tolist():
            mine = np.flatnonzero(where == idx)
            bucket = buckets[idx]
            peak = tuple(counts[mine].max(axis=0).tolist())
            bucket.health_peak = peak if bucket.health_peak is None else tuple(map(max, bucket.health_peak, peak))
            bucket.health_end = tuple(counts[mine[-1]].tolist())

    def _isr_moves_of(self, was: np.ndarray, new: np.ndarray, changed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether each changed record's ISR shrank and grew (``_partition``), once per pair of ISRs."""
        shrank, grew = np.zeros(len(was), bool), np.zeros(len(was), bool)
        sel = np.flatnonzero(changed)
        if not len(sel):
            return shrank, grew
        masks = self._isr_masks()
        before, after = masks[was[sel]], masks[new[sel]]
        if MASKED_ISRS and (before >= 0).all() and (after >= 0).all():
            shrank[sel], grew[sel] = (before & ~after) != 0, (after & ~before) != 0
            return shrank, grew
        width = len(self.isrs)
        pairs, inverse = np.unique(was[sel] * width + new[sel], return_inverse=True)  # one number per pair
        found = []
        for a, b in zip(*(x.tolist() for x in divmod(pairs, width)), strict=True):
            move = self.isr_moves.get((a, b))
            if move is None:
                before, after = set(self.isrs[a]), set(self.isrs[b])
                move = self.isr_moves[(a, b)] = (not before <= after, not after <= before)
            found.append(move)
        table = np.asarray(found, bool).reshape(-1, 2)[inverse.ravel()]
        shrank[sel], grew[sel] = table[:, 0], table[:, 1]
        return shrank, grew

    def _isr_holds(self, isr: np.ndarray, leader: np.ndarray, asked: np.ndarray) -> np.ndarray:
        """Whether each asked record's leader (a broker) is in the ISR it had before (others: True)."""
        out = np.ones(len(isr), bool)
        sel = np.flatnonzero(asked)
        if not len(sel):
            return out
        masks, asked_leader = self._isr_masks()[isr[sel]], leader[sel]
        if MASKED_ISRS and (masks >= 0).all():
            out[sel] = (asked_leader < _MASK_BITS) & ((masks >> np.minimum(asked_leader, _MASK_BITS - 1)) & 1 != 0)
        else:
            width = int(leader[sel].max()) + 1
            pairs, inverse = np.unique(isr[sel] * width + leader[sel], return_inverse=True)
            holds = [b in self.isrs[a] for a, b in zip(*(x.tolist() for x in divmod(pairs, width)), strict=True)]
            out[sel] = np.asarray(holds, bool)[inverse.ravel()]
        return out

    def _count(self, ts: int, offset: int, kind: str) -> Bucket | None:
        """Count a record of ``kind`` at ``offset`` and time ``ts``; its bucket (None: untimed)."""
        if ts <= 0:
            self.model.untimed += 1
            return None
        buckets = self.model.buckets
        bucket = buckets.get(ts // self.model.width)
        if bucket is None:
            idx = ts // self.model.width
            if self.lo is None:
                self.lo = self.hi = idx
            self.lo, self.hi = min(self.lo, idx), max(self.hi, idx)
            if self.hi - self.lo >= self.max_buckets:
                self._widen()
                idx = ts // self.model.width
                buckets = self.model.buckets
            bucket = buckets.get(idx)
            if bucket is None:
                bucket = buckets[idx] = Bucket(offset, offset)
        bucket.records += 1
        bucket.last_offset = offset
        bucket.types[kind] += 1
        return bucket

    def _widen(self) -> None:
        """Merge buckets into wider ones until the span fits the cap."""
        model = self.model
        self._close_cells(list(self.held))
        while self.hi - self.lo >= self.max_buckets:
            factor = next_width(model.width) // model.width
            model.width *= factor
            self.lo, self.hi = self.lo // factor, self.hi // factor
            model.buckets = _regroup(model.buckets, factor, Bucket.merge)
            self.cells.regroup(factor)

    def _bucket(self, e: Entry) -> Bucket | None:
        """The bucket ``e`` was counted in (the record being added, or one held by a transaction)."""
        if e is self.entry:
            return self.entry_bucket
        return self.model.buckets.get(e.timestamp // self.model.width) if e.timestamp > 0 else None

    # -- raft ----------------------------------------------------------------------------------

    def _leader_change(self, e: Entry, data: dict) -> None:
        if self.epoch is not None:
            node = self._node_min_isr()
            self.epoch.leader = data["leaderId"]
            self.epoch.voters = ", ".join(str(v["voterId"]) for v in data.get("voters") or [])
            if self._node_min_isr() != node:  # the min ISR of a topic with no config of its own
                self._forget_min_isrs()
        configs = self.image.configs.resources
        if any(t == BROKER and name and MIN_ISR in c for (t, name), c in configs.items()):
            self._recheck(self._all_partitions())  # min ISR may come from the new active controller's config

    def _voters(self, e: Entry, data: dict) -> None:
        voters = ", ".join(str(v["voterId"]) for v in data["voters"])
        self.model.controller_events.append(Event(e.offset, e.timestamp, "voters", "voters", f"voters: {voters}"))

    def _kraft_version(self, e: Entry, data: dict) -> None:
        level = data["kRaftVersion"]
        self.model.feature_events.append(
            Event(e.offset, e.timestamp, "kraft.version", "kraft.version", f"kraft.version {level}", level))

    # -- partitions and topics -----------------------------------------------------------------

    def _track(self, tid: str, pid: int, part: dict, ts: int | None) -> PartitionTrack:
        isr = tuple(part["isr"])
        track = PartitionTrack(self.topic_names.get(tid, tid), tid, pid, len(part["replicas"]), part["leader"],
                               isr, ts, len(isr))
        self.model.partitions[(tid, pid)] = track
        self.topic_partitions.setdefault(tid, []).append((tid, pid))
        return track

    def _partition(self, e: Entry, data: dict, old: Any) -> None:
        key = tid, pid = data["topicId"], data["partitionId"]
        topic = self.image.topics.by_id.get(tid)
        part = topic["partitions"].get(pid) if topic else None
        if part is None:
            return
        self._set_health(key, part)
        track = self.model.partitions.get(key)
        if track is None or track.removed_time is not None:
            self._track(tid, pid, part, e.timestamp)
            return
        leader, isr = part["leader"], tuple(part["isr"])
        track.replicas = len(part["replicas"])
        was, was_isr = track.leader, track.isr
        if leader == was and isr == was_isr:
            return
        moved = int(leader != was)
        before, after = set(was_isr), set(isr)
        shrank = int(not before <= after)
        grew = int(not after <= before)
        unclean = int(moved and leader >= 0 and leader not in before)
        if moved:
            note = " UNCLEAN (not in the old ISR)" if unclean else ""
            self.model.leader_events.append(Event(
                e.offset, e.timestamp, "leader", track.name,
                f"leader {was} -> {leader}, leader epoch {part['leaderEpoch']}{note}", leader, key))
        track.leader, track.isr = leader, isr
        track.leader_changes += moved
        track.shrinks += shrank
        track.expands += grew
        track.unclean += unclean
        bucket = self._bucket(e)
        if bucket is None:
            return
        bucket.leader_changes += moved
        bucket.isr_shrinks += shrank
        bucket.isr_expands += grew
        size = len(isr)
        self.cells.put_one(track, (e.timestamp // self.model.width, e.offset, e.timestamp, e.offset, e.timestamp, size,
                                   size, leader, moved, shrank, grew))

    def _topic(self, e: Entry, data: dict, old: Any) -> None:
        name, tid = data["name"], data["topicId"]
        again = " (re-created: new topic id)" if name in self.seen_names else ""
        self.topic_names[tid] = name
        self.named.setdefault(name, []).append(tid)
        self.seen_names.add(name)
        self.model.topic_events.append(Event(e.offset, e.timestamp, "created", name, f"topic id {tid}{again}",
                                             len(self.image.topics.by_id)))

    def _remove_topic(self, e: Entry, data: dict, name: Any) -> None:
        tid = data["topicId"]
        for key in self.topic_partitions.pop(tid, []):
            self.model.partitions[key].removed_time = e.timestamp
            self._set_health(key, None)
            self.removed.add(key)
        if REMOVED_KEPT is not None and len(self.removed) > 2 * REMOVED_KEPT:
            self._drop_removed(REMOVED_KEPT)
        self.model.topic_events.append(Event(e.offset, e.timestamp, "deleted", name or tid,
                                             f"topic id {tid}; its partitions and configs go with it",
                                             len(self.image.topics.by_id)))

    def _drop_removed(self, kept: int) -> None:
        """Keep the ``kept`` removed partitions of most churn, so the model does not grow with the
        topics deleted over the log; the rest are counted."""
        tracks = self.model.partitions
        gone = sorted((k for k in self.removed if tracks[k].removed_time is not None), key=lambda k: tracks[k].rank)
        for key in gone[kept:]:
            del tracks[key]
        self.model.partitions_dropped += max(len(gone) - kept, 0)
        self.removed = set(gone[:kept])

    def _clear_elr(self, e: Entry, data: dict, old: Any) -> None:
        name = data.get("topicName", "")
        self._recheck(self._topic_keys(name) if name else self._all_partitions())

    # -- partition health ----------------------------------------------------------------------

    def _all_partitions(self) -> list[tuple[str, int]]:
        return [(tid, pid) for tid, topic in self.image.topics.by_id.items() for pid in topic["partitions"]]

    def _topic_keys(self, name: str) -> list[tuple[str, int]]:
        tid = self.image.topics.id_by_name.get(name)
        return [(tid, pid) for pid in self.image.topics.by_id[tid]["partitions"]] if tid is not None else []

    def min_isr(self, topic_name: str) -> int:
        """min.insync.replicas as Kafka's controller resolves it (ConfigurationControlManager.getTopicConfig):
        the topic's config, the active controller's node config, the cluster default, then the static
        config, which the log does not hold: Kafka's default stands in for it."""
        given = _min_isr_of(self.image.configs.resources.get((TOPIC, topic_name)))
        return given if given is not None else self._node_min_isr()

    def _node_min_isr(self) -> int:
        """``min_isr`` of a topic with no min.insync.replicas of its own."""
        configs = self.image.configs.resources
        leader = self.epoch.leader if self.epoch is not None else -1
        for key in ((BROKER, str(leader)) if leader >= 0 else None, (BROKER, "")):
            given = _min_isr_of(configs.get(key)) if key else None
            if given is not None:
                return given
        return KAFKA_MIN_ISR

    def _set_health(self, key: tuple[str, int], part: dict | None) -> None:
        """Move the partition's counts to its new flags (``None``: it is gone)."""
        if part is None:
            flags, leader = None, -1
        else:
            leader, isr = part["leader"], len(part["isr"])
            unavailable = leader >= 0 and _unavailable(self.image.brokers.registrations.get(leader))
            flags = (leader < 0, unavailable, isr < self._topic_min_isr(key[0]), isr < len(part["replicas"]),
                     bool(part["eligibleLeaderReplicas"]))
        self._lead(key, leader)
        old = self.health.get(key)
        if flags == old:
            return
        self.health_counts = tuple(map(operator.add, self.health_counts,
                                       map(operator.sub, flags or _NO_FLAGS, old or _NO_FLAGS)))
        if flags is None:
            del self.health[key]
        else:
            self.health[key] = flags
        self.health_moved = True

    def _forget_min_isrs(self) -> None:
        self.min_isrs.clear()
        self.node_min_isr = None
        self.min_isr_era += 1

    def _forget_min_isrs_moved_by(self, rec: Any, kind: str) -> None:
        """Forget the min ISRs the record may move (``_keeps_min_isr``). In a transaction a decoded metadata record
        moves none: the image holds it unapplied until End (``ClusterImage.apply``), which forgets them all. Outside
        one, a topic's creation moves only its topic's (a TopicRecord moves no config, only its topic id's name), a
        removal or a topic's min.insync.replicas config only those of the topics of its name (a RemoveTopicRecord
        drops its topic's name's configs, ``ClusterImage._remove_topic``); any other such record all of them."""
        if _keeps_min_isr(rec, kind):
            return
        if rec.error is None and kind != END:
            if self.image.transaction is not None:
                return
            if kind == "TOPIC_RECORD":
                self._forget_topic_min_isrs([rec.data["topicId"]])
                return
            if kind == "REMOVE_TOPIC_RECORD":
                tid = rec.data["topicId"]
                self._forget_topic_min_isrs([tid, *self.named.get(self.topic_names.get(tid), ())])
                return
            if kind == "CONFIG_RECORD" and rec.data["resourceType"] == TOPIC and rec.data["resourceName"]:
                self._forget_topic_min_isrs(self.named.get(rec.data["resourceName"], ()))
                return
        self._forget_min_isrs()

    def _forget_topic_min_isrs(self, tids) -> None:
        known, codes = self.topic_min_isr, self.topic_codes
        for tid in tids:
            self.min_isrs.pop(tid, None)
            if (code := codes.get(tid)) is not None and code < len(known):
                known[code, 1] = -1  # (no era's)

    def _topic_min_isr(self, tid: str) -> int:
        min_isr = self.min_isrs.get(tid)
        if min_isr is None:  # ``min_isr``, the node's part told once until forgotten
            min_isr = _min_isr_of(self.image.configs.resources.get((TOPIC, self.topic_names.get(tid, ""))))
            if min_isr is None:
                min_isr = self.node_min_isr
                if min_isr is None:
                    min_isr = self.node_min_isr = self._node_min_isr()
            self.min_isrs[tid] = min_isr
        return min_isr

    def _lead(self, key: tuple[str, int], leader: int) -> None:
        """Note the partition's leader (-1: none) in ``leader_of`` and ``led``."""
        was = self.leader_of.get(key)
        if was != leader:
            if was is not None:
                del self.leader_of[key]
                self.led[was].discard(key)
            if leader >= 0:
                self.leader_of[key] = leader
                self.led.setdefault(leader, set()).add(key)

    def _recheck(self, keys) -> None:
        keys = list(keys)
        if self.held:  # those held rechecked in ``cols``: a record that rechecks moves no partition (the others
            codes, held = self.key_codes, self.held  # have them written back first: ``_release_read_by``)
            mine = [c for k in keys if (c := codes.get(k)) is not None and c in held]
            if mine:
                self._recheck_rows(self.slot_of[mine])
                keys = [k for k in keys if codes.get(k) not in held]
        for tid, pid in keys:
            topic = self.image.topics.by_id.get(tid)
            part = topic["partitions"].get(pid) if topic else None
            self._set_health((tid, pid), part)

    def _health_moved(self, e: Entry) -> None:
        self.health_moved = False
        counts = self.health_counts
        if counts == self.shown_health:
            return  # partitions moved, not the counts
        self.shown_health = counts
        self.model.health_changes.append((e.offset, e.timestamp, counts))
        bucket = self.entry_bucket  # ``e`` is the record being added
        if bucket is not None:
            peak = bucket.health_peak
            bucket.health_peak = counts if peak is None else tuple(map(max, peak, counts))
            bucket.health_end = counts

    def finish(self) -> None:
        """The partitions in each health state at the end of the log."""
        self._release_all()
        self.cells.made()
        for state in HEALTH:
            self.model.end_health[state] = []
        for (tid, pid), flags in sorted(self.health.items(), key=lambda kv: (self.topic_names.get(kv[0][0], ""), kv[0])):
            part = self.image.topics.by_id[tid]["partitions"][pid]
            name = self.topic_names.get(tid, tid)
            row = PartitionHealth(f"{name}-{pid}", part["leader"], tuple(part["isr"]), len(part["replicas"]),
                                  self.min_isr(name), tuple(part["eligibleLeaderReplicas"]))
            for state, flag in zip(HEALTH, flags, strict=True):
                if flag:
                    self.model.end_health[state].append(row)

    # -- brokers and controllers ---------------------------------------------------------------

    def _broker(self, e: Entry, data: dict, old: Any) -> None:
        bid = data.get("brokerId", data.get("id"))
        registration = self.image.brokers.registrations.get(bid)
        state = broker_state(registration)
        lane = self.model.brokers.get(bid)
        if lane is None:
            lane = self.model.brokers[bid] = BrokerLane("absent", Capped(LANE_EVENTS))
        registered = e.record.type == "REGISTER_BROKER_RECORD"
        if not self.folding:  # (a fold's rechecks are its own: ``_flip_rows``)
            led = self.led.get(bid, ())
            if self.held:  # those it leads in ``cols``; those it led when written back last lead no more
                self._recheck_held(bid)
                holding = self.held_led.get(bid, 0)  # of ``led`` (a held partition's ``leader_of`` stays as held)
                if holding == len(led):
                    led = ()
                elif holding:
                    led = [k for k in led if self.key_codes.get(k) not in self.held]
            self._recheck(led)
        if state == self.broker_states.get(bid, lane.start_state) and not registered:
            return
        self.broker_states[bid] = state
        epoch = registration["brokerEpoch"] if registration else data.get("brokerEpoch", data.get("epoch"))
        what = {"active": "unfenced", "fenced": "fenced", "shutdown": "in controlled shutdown",
                "absent": "unregistered"}[state]
        if registered:
            rack = f", rack {registration['rack']}" if registration and registration["rack"] else ""
            what = f"registered ({what}), incarnation {data['incarnationId']}{rack}"
        lane.events.append(Event(e.offset, e.timestamp, state, f"broker {bid}", f"{what}, broker epoch {epoch}",
                                 epoch))

    def _controller(self, e: Entry, data: dict, old: Any) -> None:
        cid = data["controllerId"]
        self.model.controller_events.append(Event(e.offset, e.timestamp, "controller", f"controller {cid}",
                                                  f"registered, incarnation {data['incarnationId']}", cid))

    # -- configs, security, features -----------------------------------------------------------

    def _old_config(self, data: dict) -> str | None:
        return self.image.configs.resources.get((data["resourceType"], data["resourceName"]), {}).get(data["name"])

    def _shown(self, key: str, value: str | None) -> str:
        if value is None:
            return "(unset)"
        return REDACTED if self.redact and is_secret_config(key) else value

    def _config(self, e: Entry, data: dict, old: Any) -> None:
        key, value = data["name"], data.get("value")
        resource = resource_key(data["resourceType"], data["resourceName"])
        if resource.endswith(":") and data["resourceType"] != TOPIC:
            resource += "<default>"
        detail = f"{key}: {self._shown(key, old)} -> {self._shown(key, value)}"
        self._change(e, "config" if value is not None else "config deleted", resource, detail)
        if key == MIN_ISR:
            self._recheck(self._topic_keys(data["resourceName"]) if data["resourceType"] == TOPIC
                          else self._all_partitions())

    def _acl(self, e: Entry, data: dict, old: Any) -> None:
        entry = data if e.record.type == "ACCESS_CONTROL_ENTRY_RECORD" else old
        if entry is None:
            self._change(e, "acl removed", "ACL", f"unknown ACL id {data['id']}")
            return
        resource = f"{ACL_RESOURCE_TYPES.get(entry['resourceType'], entry['resourceType'])}:{entry['resourceName']}"
        detail = (f"{PERMISSION_TYPES.get(entry['permissionType'])} {entry['principal']} "
                  f"{OPERATIONS.get(entry['operation'])} from {entry['host']}")
        self._change(e, "acl" if entry is data else "acl removed", resource, detail)

    def _quota(self, e: Entry, data: dict, old: Any) -> None:
        removed = data.get("remove", False)
        detail = f"{data['key']} removed" if removed else f"{data['key']} = {data['value']:g}"
        self._change(e, "quota", f"quota {entity_key(entity_of(data))}", detail)

    def _scram(self, e: Entry, data: dict, old: Any) -> None:
        removed = e.record.type.startswith("REMOVE")
        mechanism = _SCRAM_MECHANISMS.get(data["mechanism"], str(data["mechanism"]))
        self._change(e, "scram", f"user {data['name']}", f"{mechanism} credential {'removed' if removed else 'set'}")

    def _token(self, e: Entry, data: dict, old: Any) -> None:
        if e.record.type.startswith("REMOVE"):
            self._change(e, "token", f"token {data['tokenId']}", "removed")
        else:
            self._change(e, "token", f"token {data['tokenId']}", f"issued to {data['owner']}")

    def _change(self, e: Entry, kind: str, subject: str, detail: str) -> None:
        self.model.changes.append(Event(e.offset, e.timestamp, kind, subject, detail))

    def _feature(self, e: Entry, data: dict, old: Any) -> None:
        name, level = data["name"], data["featureLevel"]
        if name == METADATA_VERSION:
            was = metadata_version_name(old) if old is not None else "unset"
            detail = f"{was} -> {metadata_version_name(level)} (level {level})"
        else:
            detail = f"level {old if old is not None else 'unset'} -> {level}" + (" (disabled)" if level == 0 else "")
        self.model.feature_events.append(Event(e.offset, e.timestamp, "feature", name, detail, level))

    def _zk_migration(self, e: Entry, data: dict, old: Any) -> None:
        state = data["zkMigrationState"]
        self.model.feature_events.append(Event(e.offset, e.timestamp, "zk-migration", "ZK migration",
                                               f"state {ZK_MIGRATION_STATES.get(state, state)}", state))


class _Told:
    """The kinds (``_Walker._kind``) of decoded records told before, by the records' ids in a sorted array, so that
    a walk's values are looked up at once: a record is shared across walks (``decode_metadata``'s cache) and told
    once while it is here. The records are held, so that their ids are not reused: at most ``_SEEN_MAX``, and
    then only the last walk's (the next walks' likeliest)."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, np.int64)  # sorted
        self.rows_of = np.zeros(0, np.int64)  # each id's row in ``rows``
        self.rows = np.zeros((0, _TOLD), np.int64)  # kind, key, leader, ISR, passed, replicas (``_Walker._kind``)
        self.held: list = []  # the record of each row

    def kinds(self, decoded: list, tell: Callable[[Any], tuple[int, ...]]) -> np.ndarray:
        """The row of each of ``decoded``, those not here told (in the order they first come) and kept."""
        ids = np.fromiter(map(id, decoded), np.int64, len(decoded))
        numbers = self._find(ids)
        if len(self.held) > _SEEN_MAX:
            found = np.flatnonzero(numbers >= 0)
            self.ids, first = np.unique(ids[found], return_index=True)
            at = found[first]
            self.held, self.rows = [decoded[i] for i in at.tolist()], self.rows[numbers[at]]
            self.rows_of = np.arange(len(at))
            numbers = self._find(ids)
        new = np.flatnonzero(numbers < 0)
        if len(new):
            new_ids, first, inverse = np.unique(ids[new], return_index=True, return_inverse=True)
            by_first = np.argsort(first)
            rank = np.empty(len(first), np.int64)
            rank[by_first] = np.arange(len(first))
            records = [decoded[i] for i in new[first[by_first]].tolist()]
            rows = np.fromiter(chain.from_iterable(map(tell, records)), np.int64, _TOLD * len(records)).reshape(-1, _TOLD)
            base = len(self.held)
            self.held += records
            self.rows = np.concatenate([self.rows, rows])
            numbers[new] = base + rank[inverse.ravel()]
            at = np.searchsorted(self.ids, new_ids)
            self.ids, self.rows_of = np.insert(self.ids, at, new_ids), np.insert(self.rows_of, at, base + rank)
        return self.rows[numbers]

    def _find(self, ids: np.ndarray) -> np.ndarray:
        """Each id's row (-1: not here)."""
        if not len(self.ids):
            return np.full(len(ids), -1, np.int64)
        at = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        return np.where(self.ids[at] == ids, self.rows_of[at], -1)


_NAMES = {_NOOP: NO_OP, _CHANGE: CHANGE,
          **{code: name for name, code in (_ASIDE_CODES | _BROKER_CODES).items()}}


def _joined(blocks: list[Block]) -> Block:
    """Blocks of consecutive offsets as one (their walks' values one after another)."""
    if len(blocks) == 1:
        return blocks[0]
    values, base, kv = [], {}, []
    for b in blocks:
        if id(b.decoded) not in base:  # (a walk's blocks share its values)
            base[id(b.decoded)] = len(values)
            values += b.decoded
        kv.append(b.kv + base[id(b.decoded)])
    return Block(values, np.concatenate(kv), *(np.concatenate([getattr(b, f) for b in blocks])
                                              for f in ("offsets", "timestamps", "epochs", "active")))


def _tally(counter, kinds: np.ndarray) -> None:
    """Count the records of ``kinds`` (a fold's) in ``counter`` by type, a type first met first."""
    if not len(kinds):
        return
    counts = np.bincount(kinds).tolist()
    met = [code for code, count in enumerate(counts) if count]
    if sum(_NAMES[code] not in counter for code in met) > 1:  # (the order of types the counter has is theirs)
        met.sort(key=lambda code: int(np.argmax(kinds == code)))
    for code in met:
        counter[_NAMES[code]] += counts[code]


def _keeps_min_isr(rec: Any, kind: str) -> bool:
    """Whether the record leaves every min ISR as it was: one of ``_KEEPS_MIN_ISR``, or a config of another key
    (a ConfigRecord sets or deletes its one key: ``state.configs``)."""
    return rec.error is None and (kind in _KEEPS_MIN_ISR or (kind == "CONFIG_RECORD" and rec.data.get("name") != MIN_ISR))


def _unpacked(flags: np.ndarray) -> np.ndarray:
    """Flags numbered as ``_FLAG_TUPLES`` as rows of 0 and 1."""
    return (flags[:, None] >> _FLAG_BITS) & 1


#: By the flags after and before (numbered as ``_FLAG_TUPLES``), the move of each health count.
_FLAG_DELTAS = _unpacked(np.arange(len(_FLAG_TUPLES)))[:, None] - _unpacked(np.arange(len(_FLAG_TUPLES)))[None, :]


def _min_isr_of(config: dict | None) -> int | None:
    """A resource's min.insync.replicas, if set to a number."""
    value = config.get(MIN_ISR) if config else None
    return int(value) if value is not None and value.strip().isdigit() else None


def _unavailable(registration: dict | None) -> bool:
    """Whether a broker cannot lead (``_set_health``): not registered, or fenced."""
    return registration is None or registration["fenced"]


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a small array, without its wrapper's cost (a few of these per stretch)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    first = np.empty(len(ordered), bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def _carried(values: np.ndarray, unchanged: int, head: np.ndarray, group: np.ndarray, seed: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """A field after each record of rows grouped by partition (``head``: a group's first row): the
    record's value where it sets one, else the one before it in the group, else the group's ``seed``;
    and where a record set it."""
    given = values != unchanged
    filled = np.where(given, values, np.where(head, seed[group], unchanged))
    src = np.where(given | head, np.arange(len(values)), 0)
    np.maximum.accumulate(src, out=src)
    return filled[src], given


def _regroup(cells: dict, factor: int, merge: Callable) -> dict:
    """Re-key by ``index // factor``, merging in time order (so a later cell merges into an earlier)."""
    out: dict = {}
    for idx in sorted(cells):
        new = idx // factor
        if new in out:
            merge(out[new], cells[idx])
        else:
            out[new] = cells[idx]
    return out
