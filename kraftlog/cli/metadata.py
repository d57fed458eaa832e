"""``kraftlog metadata``: what a client's Metadata request would have returned at a point."""

import json

from kraftlog.cli import target
from kraftlog.state.metadata_view import metadata_response


def add_parser(sub) -> None:
    p = sub.add_parser(
        "metadata", help="what a client's Metadata request would have returned at an offset or time",
        description="Brokers (host, port, rack for the listener) and, per topic, its id and per partition "
        "the leader, leader epoch, replicas, ISR, offline replicas, and LEADER_NOT_AVAILABLE where "
        "there is no live leader.")
    target.add_node_args(p)
    target.add_point_args(p)
    p.add_argument("--listener", metavar="NAME", help="listener name (default: each broker's first listener)")


def run(args) -> int:
    built = target.state_at(args, args.offset, args.time)
    print(json.dumps(metadata_response(built.image, args.listener), indent=2))
    return target.report(built)
