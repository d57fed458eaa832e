"""Files layer: walk segments and snapshots batch by batch, find what a log directory holds."""
