"""``kraftlog inspect``: what copied log directories hold, per node, and whether they agree."""

import json
import sys
from collections import Counter, defaultdict

from kraftlog.cli import main, progress
from kraftlog.cli.render import iso_time, printable
from kraftlog.files.copies import copy_order
from kraftlog.files.coverage import compare_copies, coverage
from kraftlog.files.logdir import FileScan, NodeDir, find_nodes, scan_file
from kraftlog.files.reader import Limits


def add_parser(sub) -> None:
    p = sub.add_parser(
        "inspect", help="report what log directories hold: files, offsets, gaps, snapshots, divergence",
        description="Report per node (each __cluster_metadata-N folder found below PATH): meta.properties, "
        "quorum-state, segments and snapshots with their offsets, gaps and overlaps, whether the metadata "
        "state can be rebuilt, files skipped, and where nodes' copies of one cluster disagree. PATH may be "
        "a log-dir root, a __cluster_metadata-0 folder, or a folder holding several nodes' log dirs. "
        "Exit 1 when a file has invalid batches or skipped bytes, or a node cannot be rebuilt.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--format", choices=["text", "json"], default="text")
    main.add_limits(p)


def _scan_json(s: FileScan) -> dict:
    return {
        "file": s.file.path.name, "bytes": s.bytes, "batchBytes": s.batch_bytes, "batches": s.batches,
        "records": s.records,
        "firstOffset": s.first_offset, "lastOffset": s.last_offset,
        "firstTime": iso_time(s.first_timestamp), "lastTime": iso_time(s.last_timestamp),
        "epochs": list(s.epochs) if s.epochs else None, "invalidBatches": s.invalid_batches,
        "skippedBytes": s.skipped_bytes,
        "regions": [{"position": r.position, "length": r.length, "reason": r.reason, "detail": r.detail}
                    for r in s.regions],
        "discontinuities": [{"expected": a, "found": b} for a, b in s.discontinuities],
        "unreadable": s.unreadable,
    }


def node_report(node: NodeDir, limits: Limits) -> dict:
    files = node.segments + node.snapshots + ([node.bootstrap] if node.bootstrap else [])
    scans = {f: scan_file(f, limits) for f in files}
    cov = coverage(node, scans)
    meta = node.meta
    return {
        "logDir": str(node.log_dir),
        "metadataDir": str(node.metadata_dir) if node.metadata_dir else None,
        "clusterId": node.cluster_id, "nodeId": node.node_id,
        "directoryId": meta.directory_id if meta else None,
        "metaPropertiesVersion": meta.version if meta else None,
        "quorumState": node.quorum_state,
        "leaderEpochs": [{"epoch": e, "startOffset": o} for e, o in node.leader_epochs],
        "bootstrap": _scan_json(scans[node.bootstrap]) if node.bootstrap else None,
        "segments": [_scan_json(scans[f]) for f in node.segments],
        "snapshots": [dict(_scan_json(scans[f]), endOffset=f.offset, epoch=f.epoch) for f in node.snapshots],
        "coverage": {"logStartOffset": cov.log_start, "lastOffset": cov.log_end,
                     "gaps": [list(g) for g in cov.gaps], "overlaps": [list(o) for o in cov.overlaps]},
        "rebuildable": cov.rebuildable,
        "rebuildFrom": cov.rebuild_from.path.name if cov.rebuild_from else ("offset 0" if cov.rebuildable else None),
        "rebuildReason": cov.reason,
        "skipped": [{"file": p.name, "why": why} for p, why in node.skipped],
        "problems": node.problems,
        "unreadable": [{"file": str(path), "why": why} for path, why in node.unreadable]
        + [{"file": str(f.path), "why": s.unreadable} for f, s in scans.items() if s.unreadable],
        "clean": all(s.clean for s in scans.values()),
    }


def _last_epoch(report: dict) -> int | None:
    """The leader epoch of the copy's last batch: epochs only grow along a log."""
    return max((s["epochs"][1] for s in report["segments"] if s["epochs"]), default=None)


def inspect(path: str, limits: Limits) -> dict:
    nodes = find_nodes(path)
    reports = [node_report(n, limits) for n in nodes]
    by_cluster: dict[str | None, list[tuple[NodeDir, dict]]] = defaultdict(list)
    for n, r in zip(nodes, reports, strict=True):
        by_cluster[n.cluster_id].append((n, r))
    clusters = []
    for cid, members in by_cluster.items():
        ends = [(r["coverage"]["lastOffset"] if r["coverage"]["lastOffset"] is not None else -1, n) for n, r in members]
        newest = min(members, key=lambda m: copy_order(_last_epoch(m[1]), m[1]["coverage"]["lastOffset"],
                                                        m[0].node_id, str(m[0].log_dir)))[0]
        clusters.append({
            "clusterId": cid,
            "nodes": [n.node_id for n, _ in members],
            "newest": newest.node_id,
            "lastOffsets": {n.name: e for e, n in ends},
            "divergence": [
                {"node": d.node, "reference": d.reference, "offset": d.offset, "detail": d.detail,
                 "sameLog": d.offset is None or d.agreed > 0}
                for d in (compare_copies(newest, n, limits) for n, _ in members if n is not newest)
            ],
        })
    return {"path": path, "nodes": reports, "clusters": clusters}


def _text(report: dict) -> str:
    out = []
    for r in report["nodes"]:
        who = f"node {r['nodeId']}" if r["nodeId"] is not None else "node (no meta.properties)"
        out.append(f"{who}, cluster {r['clusterId']}: {printable(r['logDir'])}")
        if r["quorumState"]:
            q = r["quorumState"]
            out.append(f"  quorum-state: leader {q.get('leaderId')}, epoch {q.get('leaderEpoch')}, "
                       f"voted {q.get('votedId')} (data_version {q.get('data_version')})")
        for kind in ("segments", "snapshots"):
            for s in r[kind]:
                span = f"offsets {s['firstOffset']}-{s['lastOffset']}" if s["firstOffset"] is not None else "empty"
                bad = f", {s['invalidBatches']} invalid batches" if s["invalidBatches"] else ""
                bad += f", {s['skippedBytes']} bytes skipped" if s["skippedBytes"] else ""
                bad += f", UNREADABLE ({s['unreadable']})" if s["unreadable"] else ""
                times = f", {s['firstTime']} .. {s['lastTime']}" if s["firstTime"] else ""
                out.append(f"  {kind[:-1]} {printable(s['file'])}: {span}, {s['batches']} batches, {s['records']} records, "
                           f"{s['bytes']} bytes{times}{bad}")
        c = r["coverage"]
        if c["logStartOffset"] is not None:
            out.append(f"  log covers {c['logStartOffset']}-{c['lastOffset']}"
                       + (f", gaps {c['gaps']}" if c["gaps"] else ", no gaps")
                       + (f", overlaps {c['overlaps']}" if c["overlaps"] else ""))
        out.append(f"  rebuildable: {'yes, from ' if r['rebuildable'] else 'NO: '}{r['rebuildReason']}")
        if r["skipped"]:
            counts = Counter(s["why"] for s in r["skipped"])
            out.append("  skipped: " + "; ".join(f"{n} {why}" for why, n in counts.most_common()))
        out.extend(f"  problem: {p}" for p in r["problems"])
        out.extend(f"  unreadable: {printable(u['file'])}: {u['why']}" for u in r["unreadable"])
    for c in report["clusters"]:
        if len(c["nodes"]) < 2:
            continue
        out.append(f"cluster {c['clusterId']}: nodes {c['nodes']}, the copy Raft would trust (last batch's "
                   f"leader epoch, then end offset): node {c['newest']}")
        for d in c["divergence"]:
            where = f"diverges at offset {d['offset']}: {d['detail']}" if d["offset"] is not None else d["detail"]
            if not d["sameLog"]:
                where += " (no batch in common: another log under the same cluster id, kept apart)"
            out.append(f"  {d['node']} vs {d['reference']}: {where}")
    return "\n".join(out)


@progress.shown("path")
def run(args) -> int:
    try:
        report = inspect(args.path, main.limits_of(args))
    except FileNotFoundError as e:
        raise main.UsageError(str(e)) from None
    if not report["nodes"]:
        print(f"kraftlog: no __cluster_metadata-N folder, meta.properties or bootstrap.checkpoint under "
              f"{args.path}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.format == "json" else _text(report))
    for r in report["nodes"]:
        for u in r["unreadable"]:
            print(f"kraftlog: {u['file']}: cannot read: {u['why']}", file=sys.stderr)
    ok = all(r["clean"] and r["rebuildable"] and not r["unreadable"] for r in report["nodes"])
    return 0 if ok else 1
