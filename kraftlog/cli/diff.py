"""``kraftlog diff``: what changed between two points of the log, per entity."""

import json

from kraftlog.cli import target
from kraftlog.state.diff import diff


def add_parser(sub) -> None:
    p = sub.add_parser(
        "diff", help="what changed between two offsets or times, per entity",
        description="Replay to both points and list each entity (broker, topic, partition, config, "
        "feature, ACL, ...) that was added, removed or changed, with before and after. A whole number (or end) is "
        "an offset; anything else is a time (ISO-8601, or t:EPOCH_MS).")
    target.add_node_args(p)
    p.add_argument("--from", dest="start", required=True, metavar="A")
    p.add_argument("--to", dest="end", required=True, metavar="B")
    p.add_argument("--format", choices=["text", "json"], default="text")


def run(args) -> int:
    try:
        a, b = target.point(args.start), target.point(args.end)
    except ValueError as e:
        raise target.main.UsageError(str(e)) from None
    log = None if target.Path(args.path).is_file() else target.open_log(args)
    before, after = target.state_at(args, *a, log=log), target.state_at(args, *b, log=log)
    changes = diff(before.image, after.image, redact=not args.no_redact)
    if args.format == "json":
        print(json.dumps([c.to_json() for c in changes], indent=2))
    else:
        print("\n".join(changes_text(changes)))
    return max(target.report(before), target.report(after))


def changes_text(changes) -> list[str]:
    """``+``/``-``/``~`` domain and key per entity, and for a changed one the fields that differ."""
    lines = []
    for c in changes:
        sign = {"added": "+", "removed": "-", "changed": "~"}.get(c.kind, "?")
        lines.append(f"{sign} {c.domain} {c.key}")
        if c.kind == "changed" and isinstance(c.before, dict) and isinstance(c.after, dict):
            for k in sorted(set(c.before) | set(c.after)):
                if c.before.get(k) != c.after.get(k):
                    lines.append(f"    {k}: {json.dumps(c.before.get(k))} -> {json.dumps(c.after.get(k))}")
        elif c.kind == "changed":
            lines.append(f"    {json.dumps(c.before)} -> {json.dumps(c.after)}")
    return lines or ["no changes"]
