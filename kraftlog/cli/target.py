"""Shared by replay, metadata, diff, history and report: which log (one copy or all copies assembled),
which point in it."""

import argparse
import sys
from pathlib import Path

from kraftlog.cli import main
from kraftlog.files.copies import Log, assemble
from kraftlog.files.logdir import NodeDir, find_nodes
from kraftlog.files.paths import classify
from kraftlog.state.rebuild import Rebuilt, Unanswerable, load_checkpoint, parse_time, rebuild


def add_node_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH",
                   help="a log-dir root, a __cluster_metadata-0 folder, a folder of several nodes' log dirs, "
                   "or a single .checkpoint file")
    p.add_argument("--node", type=int, metavar="ID",
                   help="read this node's copy alone (default: the log assembled from every copy of the "
                   "cluster, each offset from the copy Raft would trust)")
    p.add_argument("--cluster", metavar="ID",
                   help="which cluster when PATH holds copies of several (ID/N for one of several unrelated "
                   "logs claiming the same cluster id)")
    p.add_argument("--apply-invalid", action="store_true",
                   help="go on past a batch that fails its CRC (default: the log ends there, as Kafka "
                   "truncates it on recovery)")
    p.add_argument("--no-redact", action="store_true", help="show SCRAM keys and secret config values")
    main.add_limits(p)


def time_arg(text: str) -> int:
    """``--time`` as epoch ms; a text that is no time is argparse's usage error, not a traceback."""
    try:
        return parse_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


#: ``--offset end``: the end of the log.
END = "end"


def offset_arg(text: str) -> int | str:
    """An offset >= 0, or ``end``/``latest`` for the end of the log; anything else is a usage error."""
    if text.strip().lower() in ("end", "latest"):
        return END
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an offset: {text!r} (a whole number >= 0, or end)") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"offsets are >= 0: {text!r} (end means the end of the log)")
    return n


def add_point_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--offset", type=offset_arg, metavar="N|end",
                   help="state after every record with offset <= N; end (or latest): the end of the log")
    g.add_argument("--time", type=time_arg, metavar="T",
                   help="state after every record with timestamp <= T (ISO-8601, UTC unless it says, or epoch ms)")
    p.add_argument("--base", default="auto", metavar="auto|none|CHECKPOINT",
                   help="start from the latest snapshot at or below the target (auto, default), from the "
                   "log's first offset (none), or from the given .checkpoint file")


def _labels(cluster_id: str | None, logs: list[Log]) -> list[str]:
    return [str(cluster_id)] if len(logs) == 1 else [f"{cluster_id}/{i}" for i in range(1, len(logs) + 1)]


def _unrelated(cluster_id: str | None, logs: list[Log], labels: list[str]) -> str:
    ids = [n.node_id for log in logs for n in log.copies]
    twice = sorted({i for i in ids if i is not None and ids.count(i) > 1})
    same = f"; node ids {twice} are claimed by copies holding different bytes" if twice else ""
    groups = "; ".join(f"{label}: " + ", ".join(str(n.log_dir) for n in log.copies)
                       for label, log in zip(labels, logs, strict=True))
    return (f"copies claiming cluster {cluster_id} hold {len(logs)} unrelated logs (no batch in common), kept "
            f"apart{same}: {groups}")


def open_log(args) -> Log:
    """The log the arguments name (``path``, ``node``, ``cluster``): one copy with ``--node``, else
    every copy of the cluster assembled (``files.copies.assemble``). Several clusters, or unrelated
    logs under one cluster id, are a usage error unless ``--cluster`` picks one. Says on stderr which
    copies supply which offsets and where they diverge."""
    limits = main.limits_of(args)
    try:
        nodes = find_nodes(args.path)
    except FileNotFoundError as e:
        raise main.UsageError(str(e)) from None
    wanted, _, lineage = (args.cluster or "").partition("/")
    by_cluster: dict[str | None, list[NodeDir]] = {}
    for n in nodes:
        by_cluster.setdefault(n.cluster_id, []).append(n)
    if args.cluster is not None:
        by_cluster = {c: ns for c, ns in by_cluster.items() if str(c) == wanted}
    if args.node is not None:
        by_cluster = {c: ns for c, ns in by_cluster.items() if any(n.node_id == args.node for n in ns)}
    if not by_cluster:
        which = " ".join(x for x in (f"of node {args.node}" if args.node is not None else "",
                                     f"of cluster {args.cluster}" if args.cluster else "") if x)
        raise main.UsageError(f"no node copy{' ' + which if which else ''} under {args.path}")
    if len(by_cluster) > 1:
        raise main.UsageError(f"copies of {len(by_cluster)} clusters under {args.path}: "
                              + ", ".join(f"{c} (nodes {sorted(n.node_id for n in ns if n.node_id is not None)})"
                                          for c, ns in by_cluster.items()) + "; choose one with --cluster")
    (cluster_id, copies), = by_cluster.items()
    chosen = [n for n in copies if args.node is None or n.node_id == args.node]
    if len(chosen) == 1 and not lineage:
        if len(nodes) > 1:
            print(f"kraftlog: reading {chosen[0].name} alone", file=sys.stderr)
        return Log.of(chosen[0])
    logs = assemble(copies, limits)
    labels = _labels(cluster_id, logs)
    if len(logs) > 1:
        message = _unrelated(cluster_id, logs, labels)
        if not lineage:
            raise main.UsageError(message + "; choose one with --cluster")
        print(f"kraftlog: {message}", file=sys.stderr)
    if lineage and args.cluster not in labels:
        raise main.UsageError(f"no {args.cluster} under {args.path}: " + ", ".join(labels))
    log = logs[labels.index(args.cluster) if lineage else 0]
    if args.node is not None:
        mine = [n for n in log.copies if n.node_id == args.node]
        if not mine:
            raise main.UsageError(f"no copy of node {args.node} in {args.cluster}")
        log = assemble(mine, limits)[0]
    for line in log.describe():
        print(f"kraftlog: {line}", file=sys.stderr)
    return log


def point(text: str) -> tuple[int | str | None, int | None]:
    """``(offset, None)`` for an offset (or ``end``), ``(None, time_ms)`` for a time (``t:MS`` for epoch ms)."""
    if text.strip().lower() in ("end", "latest") or text.strip().lstrip("-").isdigit():
        try:
            return offset_arg(text), None
        except argparse.ArgumentTypeError as e:
            raise ValueError(str(e)) from None
    return None, parse_time(text.removeprefix("t:"))


def state_at(args, offset: int | str | None, time_ms: int | None, log: Log | None = None) -> Rebuilt:
    """The image the arguments ask for (in ``log``, else ``open_log(args)``); a single .checkpoint PATH
    gives the state it holds. A point the log cannot answer is ``main.Refused`` (exit 1)."""
    limits = main.limits_of(args)
    lf = classify(args.path)
    if Path(args.path).is_file():
        if lf.kind not in ("snapshot", "bootstrap"):
            raise main.UsageError(f"a single file must be a .checkpoint snapshot: {args.path}")
        return Rebuilt(load_checkpoint(lf, limits), f"checkpoint {lf.path.name}", 0)
    log = log or open_log(args)
    try:
        return rebuild(log, offset=None if offset == END else offset, time_ms=time_ms,
                       base=getattr(args, "base", "auto"), limits=limits, apply_invalid=args.apply_invalid)
    except Unanswerable as e:
        for m in e.problems:  # what could not be read is often why the point has no answer: named first
            print(f"kraftlog: problem: {m}", file=sys.stderr)
        raise main.Refused(str(e)) from None
    except ValueError as e:
        raise main.UsageError(str(e)) from None


def report(built: Rebuilt) -> int:
    """Say on stderr how the state was reached and what went wrong; exit 1 when something did."""
    img = built.image
    prov = img.provenance
    print(f"kraftlog: state at offset {prov.offset} (epoch {prov.epoch}) from {built.base}, "
          f"{built.records} log records applied", file=sys.stderr)
    if built.open_transaction is not None:
        t = built.open_transaction
        print(f"kraftlog: a metadata transaction begun at offset {t.begin_offset} is still open there; "
              f"its records are not applied", file=sys.stderr)
    if not (img.brokers.registrations or img.topics.by_id or img.features.levels):
        built.notes.append(f"the cluster holds no broker, topic or feature level yet at offset {prov.offset}")
    for note in built.notes:
        print(f"kraftlog: note: {note}", file=sys.stderr)
    messages = built.problems.messages + [f"offset {p.offset} {p.type}: {p.message}" for p in img.problems]
    for m in messages[:20]:
        print(f"kraftlog: problem: {m}", file=sys.stderr)
    if len(messages) > 20:
        print(f"kraftlog: ... and {len(messages) - 20} more problems", file=sys.stderr)
    return 1 if messages else 0
