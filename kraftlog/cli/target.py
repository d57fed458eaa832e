"""Shared by replay, metadata, diff and history: which node copy, which point in the log."""

import argparse
import sys
from pathlib import Path

from kraftlog.cli import main
from kraftlog.files.logdir import NodeDir, find_nodes
from kraftlog.files.paths import classify
from kraftlog.files.reader import Limits
from kraftlog.state.rebuild import Rebuilt, load_checkpoint, parse_time, rebuild


def add_node_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH",
                   help="a log-dir root, a __cluster_metadata-0 folder, a folder of several nodes' log dirs, "
                   "or a single .checkpoint file")
    p.add_argument("--node", type=int, metavar="ID",
                   help="which node's copy when PATH holds several (default: the copy that reaches furthest)")
    p.add_argument("--no-redact", action="store_true", help="show SCRAM keys and secret config values")
    main.add_limits(p)


def time_arg(text: str) -> int:
    """``--time`` as epoch ms; a text that is no time is argparse's usage error, not a traceback."""
    try:
        return parse_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_point_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--offset", type=int, metavar="N", help="state after every record with offset <= N")
    g.add_argument("--time", type=time_arg, metavar="T",
                   help="state after every record with timestamp <= T (ISO-8601, UTC unless it says, or epoch ms)")
    p.add_argument("--base", default="auto", metavar="auto|none|CHECKPOINT",
                   help="start from the latest snapshot at or below the target (auto, default), from the "
                   "log's first offset (none), or from the given .checkpoint file")


def pick_node(path: str, node_id: int | None, limits: Limits) -> NodeDir:
    try:
        nodes = find_nodes(path)
    except FileNotFoundError as e:
        raise main.UsageError(str(e)) from None
    if node_id is not None:
        nodes = [n for n in nodes if n.node_id == node_id]
    if not nodes:
        raise main.UsageError(f"no node copy{'' if node_id is None else f' of node {node_id}'} under {path}")
    if len(nodes) > 1:
        def reach(n: NodeDir) -> int:
            return max([s.offset for s in n.segments] + [s.offset for s in n.snapshots] + [-1])
        nodes.sort(key=reach)
        print(f"kraftlog: {len(nodes)} node copies under {path}; using {nodes[-1].name} "
              f"(choose with --node)", file=sys.stderr)
    return nodes[-1]


def point(text: str) -> tuple[int | None, int | None]:
    """``(offset, None)`` for a whole number, ``(None, time_ms)`` for a time (``t:MS`` for epoch ms)."""
    if text.lstrip("-").isdigit():
        return int(text), None
    return None, parse_time(text.removeprefix("t:"))


def state_at(args, offset: int | None, time_ms: int | None) -> Rebuilt:
    """The image the arguments ask for; a single .checkpoint PATH gives the state it holds."""
    limits = main.limits_of(args)
    lf = classify(args.path)
    if Path(args.path).is_file():
        if lf.kind not in ("snapshot", "bootstrap"):
            raise main.UsageError(f"a single file must be a .checkpoint snapshot: {args.path}")
        return Rebuilt(load_checkpoint(lf, limits), f"checkpoint {lf.path.name}", 0)
    try:
        node = pick_node(args.path, args.node, limits)
        return rebuild(node, offset=offset, time_ms=time_ms, base=getattr(args, "base", "auto"), limits=limits)
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
    for note in built.notes:
        print(f"kraftlog: note: {note}", file=sys.stderr)
    messages = built.problems.messages + [f"offset {p.offset} {p.type}: {p.message}" for p in img.problems]
    for m in messages[:20]:
        print(f"kraftlog: problem: {m}", file=sys.stderr)
    if len(messages) > 20:
        print(f"kraftlog: ... and {len(messages) - 20} more problems", file=sys.stderr)
    return 1 if messages else 0
