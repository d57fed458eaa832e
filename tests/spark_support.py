"""Shared by the Spark tests: one local session, the fixtures, and the job's tables read back as
the state layer's JSON so that views compare with ``ClusterImage.to_json`` as they are.

``conftest`` gives every test module the fixtures (``spark``, ``fixtures``, ``local_run_three``); a
module must not import them, which would make them its own. The session is created once
(``session()`` returns the active one) and lives until the interpreter exits.
"""

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from conftest import REPO
from kraftlog.spark import cli as kraft_metadata  # noqa: F401 - the job's command line, for the tests
from kraftlog.spark.job import Options, run
from kraftlog.spark.session import session

FIXTURES = REPO / "fixtures"
FIXTURE_NAMES = ("single-node", "three-nodes", "fleet")


@pytest.fixture(scope="session")
def spark():
    return session("local[2]", "kraftlog-tests", {"spark.sql.shuffle.partitions": "4"})


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory) -> Path:
    """``fixtures/`` as committed, or the same folders written by ``scripts/make_fixtures.py``."""
    if all((FIXTURES / name).is_dir() for name in FIXTURE_NAMES):
        return FIXTURES
    out = tmp_path_factory.mktemp("fixtures") / "fixtures"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_fixtures.py"), "--out", str(out)], check=True,
                   capture_output=True)
    return out


@pytest.fixture(scope="session")
def local_run_three(spark, fixtures, tmp_path_factory):
    """``three-nodes`` with views at offset 1000, run once on the tests' local session (the tables runs on
    a cluster, through Connect and into object storage are compared with): its input and output folders."""
    out = tmp_path_factory.mktemp("local-three") / "tables"
    run(spark, Options(inputs=[str(fixtures / "three-nodes")], output=str(out), at_offsets=[1000]))
    return fixtures / "three-nodes", out


def table(out: Path, name: str) -> list[dict]:
    """A written table as rows (``cluster_id`` from the partition folders)."""
    return ds.dataset(out / name, format="parquet", partitioning="hive").to_table().to_pylist()


class Views:
    """The five snapshot-equivalent views of one output, by (cluster_id, at_offset)."""

    NAMES = ("state_topics", "state_partitions", "state_brokers", "state_configs", "state_features")

    def __init__(self, out: Path) -> None:
        self.rows = {n: defaultdict(list) for n in self.NAMES}
        for n in self.NAMES:
            for r in table(out, n):
                self.rows[n][(r["cluster_id"], r["at_offset"])].append(r)

    def points(self) -> set[tuple[str, int]]:
        return {k for rows in self.rows.values() for k in rows}

    def image(self, cluster: str, at: int) -> dict:
        """The views at one point in ``ClusterImage.to_json``'s shape (topics, brokers, configs, features)."""
        topics = {t["topic_name"]: {"topicId": t["topic_id"], "partitions": {}}
                  for t in self.rows["state_topics"][(cluster, at)]}
        for p in sorted(self.rows["state_partitions"][(cluster, at)], key=lambda p: p["partition_id"]):
            topics[p["topic_name"]]["partitions"][str(p["partition_id"])] = {
                "replicas": p["replicas"], "isr": p["isr"], "removingReplicas": p["removing_replicas"],
                "addingReplicas": p["adding_replicas"], "leader": p["leader"],
                "leaderRecoveryState": p["leader_recovery_state"], "leaderEpoch": p["leader_epoch"],
                "partitionEpoch": p["partition_epoch"], "directories": p["directories"],
                "eligibleLeaderReplicas": p["eligible_leader_replicas"], "lastKnownElr": p["last_known_elr"]}
        brokers = {}
        for b in sorted(self.rows["state_brokers"][(cluster, at)], key=lambda b: b["broker_id"]):
            brokers[str(b["broker_id"])] = {
                "brokerId": b["broker_id"], "brokerEpoch": b["broker_epoch"], "incarnationId": b["incarnation_id"],
                "endPoints": sorted(({"name": e["name"], "host": e["host"], "port": e["port"],
                                      "securityProtocol": e["security_protocol"]} for e in b["endpoints"]),
                                    key=lambda e: e["name"]),
                "rack": b["rack"], "fenced": b["fenced"], "inControlledShutdown": b["in_controlled_shutdown"],
                "features": sorted(({"name": f["name"], "minSupportedVersion": f["min_supported_version"],
                                     "maxSupportedVersion": f["max_supported_version"]} for f in b["features"]),
                                   key=lambda f: f["name"]),
                "logDirs": b["log_dirs"]}
        configs: dict[str, dict] = defaultdict(dict)
        for c in self.rows["state_configs"][(cluster, at)]:
            configs[f"{c['resource_type']}:{c['resource_name']}"][c["config_name"]] = c["value"]
        features = {f["feature"]: f["level"] for f in self.rows["state_features"][(cluster, at)]}
        return {"topics": topics, "brokers": brokers, "configs": dict(configs), "features": features}


def compared(image) -> dict:
    """The parts of a ``ClusterImage`` the views hold, as ``Views.image`` gives them."""
    return {k: image[k] for k in ("topics", "brokers", "configs", "features")}
