"""Producer id allocation (``ProducerIdsImage``)."""

from collections.abc import Callable


class ProducerIds:
    """The first id of the next block; -1 until a block is issued."""

    def __init__(self) -> None:
        self.next_producer_id = -1

    def handlers(self) -> dict[str, Callable[[dict], None]]:
        return {"PRODUCER_IDS_RECORD": self._set}

    def _set(self, data: dict) -> None:
        self.next_producer_id = data["nextProducerId"]

    def to_json(self) -> dict:
        return {"nextProducerId": self.next_producer_id}
