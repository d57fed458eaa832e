"""One cluster on disk: the simulation writes the primary node's copy; the other nodes' copies,
their small files and the ground truth follow. Fleets are several clusters side by side."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kraftlog.synth import layout, records, versions
from kraftlog.synth.image import Image
from kraftlog.synth.sim import Simulation
from kraftlog.synth.spec import ClusterSpec
from kraftlog.synth.truth import Truth
from kraftlog.synth.writer import write_snapshot

TRUTH_FILE = "ground-truth.json"
_RESOURCE_TYPES = {2: "TOPIC", 4: "BROKER", 16: "CLIENT_METRICS", 32: "GROUP"}
_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


def node_dir(root: Path, spec: ClusterSpec, node: int) -> Path:
    """The cluster folder is the log dir of a single written node, else it holds ``node-<id>/``."""
    return root if spec.nodes == 1 else root / f"node-{node}"


def generate_cluster(spec: ClusterSpec, root: Path) -> dict:
    """Write every requested node copy of one cluster under ``root``; returns the cluster summary."""
    spec.check()
    diverging = spec.diverging_node
    primary = next(n for n in spec.written_nodes if n != diverging)
    metadata_dir = node_dir(root, spec, primary) / layout.METADATA_DIR
    metadata_dir.mkdir(parents=True)
    truth = Truth(root / ".ground-truth.spool")
    sim = Simulation(spec, metadata_dir, truth)
    sim.run()
    formatted_ms = spec.start_ms - sim.rng.randrange(5_000, 60_000)
    for node in spec.written_nodes:
        log_dir = node_dir(root, spec, node)
        own = log_dir / layout.METADATA_DIR
        if node != primary:
            layout.copy_metadata_dir(metadata_dir, own, sim.cut if node == diverging else None)
        _node_files(spec, sim, node, log_dir, formatted_ms)
    summary = _summary(spec, sim, primary)
    truth.finish(root / TRUTH_FILE, summary, _final(sim.image))
    return summary


def _node_files(spec: ClusterSpec, sim: Simulation, node: int, log_dir: Path, formatted_ms: int) -> None:
    """What ``kafka-storage format`` wrote there, and what the node's Raft client left."""
    own = log_dir / layout.METADATA_DIR
    software = max(spec.metadata_versions)
    directory_id = sim.node_dirs[node] if software >= versions.DIRECTORIES else None
    layout.write_meta_properties(log_dir, node, sim.cluster_id, directory_id, formatted_ms)
    bootstrap = [records.feature_level(n, level) for n, level in sim.ctl.bootstrap_features().items()]
    write_snapshot(log_dir / "bootstrap.checkpoint", bootstrap, 0, 0, formatted_ms)
    if spec.kraft_version and node in spec.controller_ids:
        write_snapshot(own / layout.snapshot_name(0, 0), [], 0, 0, formatted_ms, sim.ctl.raft_records())
    epochs = sim.writer.epochs
    leader, epoch = sim.ctl.leader, sim.ctl.epoch
    if node == spec.diverging_node:
        leader, epoch = node, sim.tail_epoch
        epochs = [(e, o) for e, o in epochs if e <= epoch]
    layout.write_quorum_state(own, leader, epoch, spec.controller_ids, spec.kraft_version)
    layout.write_leader_epoch_checkpoint(own, epochs)
    layout.write_partition_metadata(own)


def _summary(spec: ClusterSpec, sim: Simulation, primary: int) -> dict:
    w = sim.writer
    return {
        "name": spec.name, "clusterId": sim.cluster_id, "seed": spec.seed,
        "metadataVersions": [versions.name(level) for level in spec.metadata_versions],
        "software": versions.name(max(spec.metadata_versions)), "kraftVersion": spec.kraft_version,
        "brokers": spec.broker_ids, "controllers": spec.controller_ids, "combined": spec.combined,
        "nodes": spec.written_nodes, "primaryNode": primary, "divergingNode": spec.diverging_node,
        "nodeDirectoryIds": {str(n): d for n, d in sim.node_dirs.items()},
        "startMs": spec.start_ms, "endMs": w.last_timestamp, "endOffset": w.next_offset,
        "lastEpoch": w.last_epoch, "leaderId": sim.ctl.leader, "logBytes": w.bytes,
        "segmentBytes": spec.segment_bytes, "snapshotBytes": spec.snapshot_bytes,
    }


def _final(image: Image) -> dict:
    """The image after the last committed record, in kraftlog's canonical key formats."""
    return {
        "features": dict(sorted(image.features.items())),
        "configs": {f"{_RESOURCE_TYPES[kind]}:{name}": dict(sorted(values.items()))
                    for (kind, name), values in sorted(image.configs.items())},
        "clientQuotas": {",".join(f"{k}={'<default>' if v is None else v}" for k, v in entity): dict(sorted(q.items()))
                         for entity, q in sorted(image.quotas.items(), key=repr)},
        "acls": sorted(image.acls),
        "scram": {_MECHANISMS[m]: sorted(u for mm, u in image.scram if mm == m) for m in sorted({m for m, _ in image.scram})},
        "delegationTokens": sorted(image.tokens),
        "producerIds": {"nextProducerId": image.next_producer_id},
        "brokers": {str(b.id): {"brokerEpoch": b.epoch, "fenced": b.fenced, "inControlledShutdown": b.in_controlled_shutdown}
                    for b in sorted(image.brokers.values(), key=lambda b: b.id)},
        "controllers": sorted(image.controllers),
        "topics": {t.name: {"topicId": t.id, "partitions": len(t.partitions)}
                   for t in sorted(image.topics.values(), key=lambda t: t.name)},
    }


def generate(out: Path, specs: list[ClusterSpec]) -> list[dict]:
    """One cluster writes straight into ``out``; a fleet writes ``out/<cluster name>/`` each."""
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        spec.check()
    return [generate_cluster(spec, out if len(specs) == 1 else out / spec.name) for spec in specs]


def fleet(base: ClusterSpec, count: int, paths: list[tuple[int, ...]]) -> list[ClusterSpec]:
    """``count`` clusters from one template: names ``cluster-<i>``, their own seeds, and the
    metadata.version paths dealt out in turn."""
    return [replace(base, name=f"cluster-{i}", seed=f"{base.seed}/{i}", metadata_versions=paths[i % len(paths)])
            for i in range(count)]
