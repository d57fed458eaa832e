"""``kraftlog partitions``: leader, ISR, ELR and health of every partition at a point."""

import json
import sys

from kraftlog.cli import progress, shell
from kraftlog.cli.render import dumps


def add_parser(sub) -> None:
    p = sub.add_parser(
        "partitions", help="leader, epochs, replicas, ISR, ELR and health of each partition at a point",
        description="Per partition: leader, leader epoch, replicas, ISR, eligible leader replicas (ELR), "
        "last known ELR, offline replicas, min.insync.replicas, and what is unhealthy (leaderless, "
        "leader-offline, offline-replicas, under-replicated, under-min-isr), judged as kafka-topics "
        "--describe does, at any point of the log. Without --offset/--time: the end of the log.")
    shell.add_point_options(p)
    p.add_argument("--unhealthy", action="store_true",
                   help="only partitions that are leaderless, have an offline leader or replicas, are "
                   "under-replicated or under min ISR")
    p.add_argument("--topic", metavar="NAME", help="only this topic")
    p.add_argument("--broker", type=int, metavar="ID", help="only partitions with a replica on this broker")
    p.add_argument("--format", choices=["text", "json", "jsonl"], default="text")


def _ids(values: list[int]) -> str:
    return ",".join(map(str, values)) or "-"


COLUMNS = ("TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "ELR", "LAST_KNOWN_ELR", "OFFLINE",
           "MIN_ISR", "STATUS")


def text_table(rows: list[dict]) -> str:
    """Aligned columns, one partition a line."""
    cells = [COLUMNS] + [
        (r["topic"], str(r["partition"]), str(r["leader"]), str(r["leaderEpoch"]), _ids(r["replicas"]),
         _ids(r["isr"]), _ids(r["eligibleLeaderReplicas"]), _ids(r["lastKnownElr"]), _ids(r["offlineReplicas"]),
         str(r["minIsr"]), ",".join(r["flags"]) or "ok")
        for r in rows
    ]
    return shell.columns(cells)


@progress.shown("path")
def run(args) -> int:
    from kraftlog.state.partition_view import partition_rows

    opened = shell.state_of(args)
    if opened is None:
        return 1
    built = opened[0]
    try:
        rows = partition_rows(built.image)
    except ValueError as e:
        print(f"kraftlog: {e}", file=sys.stderr)
        return 1
    if args.topic is not None:
        rows = [r for r in rows if r["topic"] == args.topic]
    if args.broker is not None:
        rows = [r for r in rows if args.broker in r["replicas"]]
    if args.unhealthy:
        rows = [r for r in rows if r["flags"]]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    elif args.format == "jsonl":
        for r in rows:
            print(dumps(r))
    else:
        print(text_table(rows), end="")
    return shell.report(built)
