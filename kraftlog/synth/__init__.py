"""Synthetic KRaft clusters: metadata log directories written the way Kafka's controllers write
them, over a simulated time span, with the ground truth the simulation intended beside them.

Modules: ``spec`` (what to simulate), ``versions`` (metadata.version rules), ``image`` and
``controller`` (the model and the records each change takes), ``events`` (scenarios), ``sim``
(the clock), ``records`` and ``writer`` (records to batches), ``layout`` (files), ``truth``,
``cluster`` (node copies and fleets).
"""

from kraftlog.synth.cluster import TRUTH_FILE, fleet, generate, generate_cluster
from kraftlog.synth.spec import ClusterSpec

__all__ = ["TRUTH_FILE", "ClusterSpec", "fleet", "generate", "generate_cluster"]
