"""CRC-32C (Castagnoli), the checksum of v2 batches.

crcmod's C extension is the baseline (~0.4 GB/s); the ``crc32c`` package uses SSE4.2/ARMv8
instructions (several GB/s) and is taken when installed.
"""

from collections.abc import Callable

crc32c: Callable[[bytes], int]

try:
    from crc32c import crc32c as _hw_crc32c  # type: ignore[import-not-found]

    crc32c = _hw_crc32c
    IMPLEMENTATION = "crc32c (hardware)"
except ImportError:  # pragma: no cover - depends on what is installed
    import crcmod.predefined

    _fn = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    crc32c = _fn
    try:
        import crcmod._crcfunext  # noqa: F401

        IMPLEMENTATION = "crcmod (C extension)"
    except ImportError:
        IMPLEMENTATION = "crcmod (pure Python, slow)"
