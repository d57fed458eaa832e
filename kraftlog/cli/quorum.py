"""``kraftlog quorum``: the KRaft quorum at a point, as ``kafka-metadata-quorum describe --status``."""

import json
import sys

from kraftlog.cli import progress, shell
from kraftlog.cli.render import iso_time


def add_parser(sub) -> None:
    p = sub.add_parser(
        "quorum", help="active controller, leader epoch, voters, kraft.version, registrations and elections at a point",
        description="What kafka-metadata-quorum describe --status would have shown at a point, from the log on "
        "disk: the active controller (the leader elected for the epoch of the last record), its epoch, "
        "kraft.version and the voters (the high watermark is not on disk: the point's offset is shown); the registered controllers and brokers with their "
        "state (fenced, controlled shutdown, epochs); and the elections (epoch starts, LeaderChange records) "
        "before and after the point. Without --offset/--time: the end of the log.")
    shell.add_point_options(p)
    p.add_argument("--elections", type=int, default=3, metavar="N",
                   help="how many elections to list before and after the point (default 3)")
    p.add_argument("--format", choices=["text", "json"], default="text")


def _election_rows(elections) -> list[tuple]:
    return [(str(e.epoch), str(e.start_offset), iso_time(e.timestamp) or "-",
             "unknown" if e.leader_id is None else str(e.leader_id)) for e in elections] or [("(none)", "", "", "")]


def text(status: dict, before, after) -> str:
    """The ``describe --status`` layout, then the registrations and the elections as tables."""
    voters = ", ".join(str(v["id"]) for v in status["voters"]) or "unknown"
    leader = "unknown" if status["leaderId"] is None else status["leaderId"]
    lines = [
        f"ClusterId:       {status['clusterId'] or 'unknown'}",
        f"LeaderId:        {leader}",
        f"LeaderEpoch:     {status['leaderEpoch']}",
        f"At:              offset {status['offset']}, {iso_time(status['timestamp']) or 'no time'}",
        f"KRaftVersion:    {status['kraftVersion']}",
        f"CurrentVoters:   [{voters}]",
        "",
        "Controllers:",
        shell.columns([("ID", "INCARNATION", "VOTER")] + [
            (str(c["id"]), c["incarnationId"], "yes" if c["voter"] else "no") for c in status["controllers"]],
            indent="  "),
        "Brokers:",
        shell.columns([("ID", "EPOCH", "STATE", "INCARNATION")] + [
            (str(b["id"]), str(b["epoch"]), b["state"], b["incarnationId"]) for b in status["brokers"]],
            indent="  "),
        "Elections up to the point:",
        shell.columns([("EPOCH", "START_OFFSET", "TIME", "LEADER")] + _election_rows(before), indent="  "),
        "Elections after the point:",
        shell.columns([("EPOCH", "START_OFFSET", "TIME", "LEADER")] + _election_rows(after), indent="  "),
    ]
    return "\n".join(lines) + "\n"


@progress.shown("path")
def run(args) -> int:
    from kraftlog.files.records import ReadProblems
    from kraftlog.state.quorum_view import around, elections, quorum_status

    opened = shell.state_of(args)
    if opened is None:
        return 1
    built, node = opened
    problems = ReadProblems()
    history = [] if node is None else elections(node.node, shell.limits(args), problems)
    status = quorum_status(built.image, history, None if node is None else node.cluster_id)
    before, after = around(history, built.image.provenance.offset, args.elections)
    if args.format == "json":
        status["electionsBefore"] = [e.to_json() for e in before]
        status["electionsAfter"] = [e.to_json() for e in after]
        print(json.dumps(status, indent=2))
    else:
        print(text(status, before, after), end="")
    for m in problems.messages:
        print(f"kraftlog: problem: {m}", file=sys.stderr)
    return max(shell.report(built), 1 if problems.messages else 0)
