"""Replay problems: records Kafka would refuse (a fault on the broker) are reported, not fatal."""

from dataclasses import dataclass

from kraftlog.wire.errors import KraftlogError


class ReplayProblem(KraftlogError):
    """A record that cannot apply to the current image; the image reports it and skips the record.

    Domain handlers raise it before they change anything, so a skipped record leaves no trace."""


#: What a handler raises for a record it cannot apply (``ReplayProblem``), or for one whose fields are not
#: what the schema promises: the image reports these and skips the record.
REFUSALS = (ReplayProblem, KeyError, TypeError, ValueError)


@dataclass(frozen=True, slots=True)
class Problem:
    """Why the record at ``offset`` did not change the image."""

    offset: int
    type: str
    message: str

    def to_json(self) -> dict:
        return {"offset": self.offset, "type": self.type, "message": self.message}
