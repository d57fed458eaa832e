"""What ``ClusterImage.apply`` is fed on the Spark side: a record type and its data, from Parquet."""

from typing import NamedTuple


class Replayed(NamedTuple):
    """A decoded record as the state layer reads it (``type``, ``data``, ``error``)."""

    type: str
    data: dict
    error: str | None = None
