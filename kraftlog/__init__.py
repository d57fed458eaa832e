"""kraftlog: read Apache Kafka KRaft ``__cluster_metadata`` logs straight from disk."""

__version__ = "0.1.0"
