"""State layer: the cluster image replayed with Kafka's semantics, and views of it."""

from kraftlog.state.diff import Change, diff
from kraftlog.state.image import ClusterImage, OpenTransaction, Provenance
from kraftlog.state.metadata_view import metadata_response
from kraftlog.state.problems import Problem
from kraftlog.state.replay import ReplayResult, load_snapshot, replay
from kraftlog.state.tree import render_tree

__all__ = [
    "Change",
    "ClusterImage",
    "OpenTransaction",
    "Problem",
    "Provenance",
    "ReplayResult",
    "diff",
    "load_snapshot",
    "metadata_response",
    "render_tree",
    "replay",
]
