"""``kraftlog replay``: the cluster's metadata image at an offset or a time."""

import json

from kraftlog.cli import progress, target
from kraftlog.state.tree import render_tree


def add_parser(sub) -> None:
    p = sub.add_parser(
        "replay", help="the metadata image at an offset or time (JSON or a metadata-shell-like tree)",
        description="Replay the metadata log to a point and print the cluster image: features, brokers, "
        "controllers, topics and partitions, configs, quotas, ACLs, SCRAM (redacted), delegation tokens, "
        "producer ids. A single .checkpoint file as PATH gives the state it holds. How the state was "
        "reached and any problems go to stderr; exit 1 when there were problems. A point the log on disk cannot "
        "answer (before anything on disk, or in a gap a later snapshot proves) is refused: exit 1, "
        "nothing on stdout.")
    target.add_node_args(p)
    target.add_point_args(p, required=False)
    p.add_argument("--format", choices=["json", "tree"], default="json")


@progress.shown("path")
def run(args) -> int:
    if args.offset is None and args.time is None and not target.Path(args.path).is_file():
        raise target.main.UsageError("replay of a directory needs --offset N or --time T")
    built = target.state_at(args, args.offset, args.time)
    redact = not args.no_redact
    if args.format == "tree":
        print(render_tree(built.image, redact=redact))
    else:
        print(json.dumps(built.image.to_json(redact=redact), indent=2))
    return target.report(built)
