"""Typed errors. Everything kraftlog raises on bad input derives from KraftlogError,
so callers (and the fuzzer) can tell a reported defect in the data from a bug."""


class KraftlogError(Exception):
    """Base of every error kraftlog raises about its input."""


class CorruptRecordError(KraftlogError):
    """The bytes do not follow the record framing (varints, lengths, counts)."""


class CorruptBatchError(KraftlogError):
    """A batch header or its length field cannot be right."""


class CompressionError(KraftlogError):
    """A compressed payload is malformed or uses an unknown codec."""


class DecompressedSizeError(CompressionError):
    """A payload inflates past the configured cap: treated as a compression bomb."""
