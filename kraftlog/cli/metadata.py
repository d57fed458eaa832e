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
    response = metadata_response(built.image, args.listener)
    print(json.dumps(response, indent=2))
    registered = built.image.brokers.registrations
    if not response["brokers"] and registered:
        built.notes.append(f"no broker is listed: each of the {len(registered)} registered brokers is fenced "
                           f"(or has no such listener) at that point")
    return target.report(built)
