"""The Spark job on a hand-encoded Kafka 4.4 log (``test_kafka_4_4``): its views equal ``kraftlog
replay`` (brokers registered by RegisterBrokerRecord v4, a newer version kraftlog reads at v3)."""

import pytest
from test_kafka_4_4 import values

from kraftlog.files.logdir import find_nodes
from kraftlog.spark.discover import cluster_of
from kraftlog.spark.job import Options, run
from kraftlog.state.rebuild import rebuild
from kraftlog.synth.layout import write_meta_properties
from kraftlog.synth.writer import data_batch
from spark_support import Views, compared

pytestmark = pytest.mark.spark


def test_views_of_a_4_4_log_equal_replay(spark, tmp_path):
    log_dir = tmp_path / "in" / "node-1"
    (log_dir / "__cluster_metadata-0").mkdir(parents=True)
    write_meta_properties(log_dir, 1, "kraftlog-4-4-cluster-0", None, 1_700_000_000_000)
    (log_dir / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(
        data_batch(values(), 0, 1_700_000_000_000, 1))
    out = tmp_path / "out"
    run(spark, Options(inputs=[str(tmp_path / "in")], output=str(out), at_offsets=[8, 9, 10]))
    node = find_nodes(log_dir)[0]
    written = Views(out)
    for at in (8, 9, 10):
        want = compared(rebuild(node, offset=at, base="none").image.to_json())
        assert sorted(want["brokers"]) == ["1", "2"]
        assert written.image(cluster_of(node), at) == want, at
