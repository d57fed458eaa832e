"""State layer: the cluster image replayed with Kafka's semantics, and views of it."""
