"""CRC-32C (Castagnoli), the checksum of v2 batches.

The ``crc32c`` package (a dependency: wheels for the usual platforms) uses SSE4.2/ARMv8
instructions, several GB/s. Where it cannot be installed, ``crcmod`` (the ``crcmod`` extra) is the
fallback: ~0.4 GB/s with its C extension, which needs a compiler as it has no Linux wheels, and
10-40x slower than that without. ``IMPLEMENTATION`` names the one in use (``kraftlog --version``).
"""

from collections.abc import Callable

import numpy as np

crc32c: Callable[[bytes], int]

try:
    import crc32c as _crc32c  # type: ignore[import-not-found]

    crc32c = _crc32c.crc32c
    # without SSE4.2/ARMv8 CRC instructions the package computes in software (still C)
    IMPLEMENTATION = "crc32c (hardware)" if _crc32c.hardware_based else "crc32c (software)"
except ImportError:
    try:
        import crcmod.predefined
    except ImportError:
        raise ImportError("kraftlog needs a CRC-32C package: pip install crc32c "
                          "(or, where it has no wheel, pip install 'kraftlog[crcmod]')") from None

    crc32c = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    try:
        import crcmod._crcfunext  # noqa: F401

        IMPLEMENTATION = "crcmod (C extension)"
    except ImportError:
        IMPLEMENTATION = "crcmod (pure Python, slow)"


#: Rows differing from the first in more byte columns than this are summed one by one: the table
#: lookups would cost more than the calls.
_MAX_COLUMNS = 48
#: (row length, differing columns) -> what a byte in each adds to the CRC, 256 values per column.
_tables: dict[tuple[int, bytes], np.ndarray] = {}
_MAX_TABLES = 256  # at most 48 columns of 1 KiB each: 12 MiB


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """The CRC-32C of each row of an (n, m) uint8 array (any strides), as uint32.

    For messages of one length a CRC is affine over GF(2): crc(a ^ d) = crc(a) ^ crc(d) ^ crc(0).
    So a row's CRC is the first row's, XOR what each byte in which it differs from the first row
    adds, read from a table per column. The rows of a run of same-size batches (a quiet log's
    NoOps) differ in a few timestamp bytes, so their CRCs cost a few lookups each, not a call."""
    n, m = rows.shape
    if n == 0:
        return np.zeros(0, np.uint32)
    first = rows[0]
    diff = rows ^ first
    columns = np.flatnonzero(diff.any(axis=0))
    if columns.size > _MAX_COLUMNS:
        return np.fromiter((crc32c(r.tobytes()) for r in rows), np.uint32, n)
    out = np.full(n, crc32c(first.tobytes()), np.uint32)
    if columns.size:
        picked = diff[:, columns] + np.arange(0, 256 * columns.size, 256, dtype=np.intp)
        out ^= np.bitwise_xor.reduce(_table(m, columns)[picked], axis=1)
    return out


def _table(m: int, columns: np.ndarray) -> np.ndarray:
    """For each of ``columns`` of an m-byte message, 256 entries: what byte value b there adds to
    the CRC, crc(b there) ^ crc(0), the XOR of what each of b's bits adds."""
    key = (m, columns.tobytes())
    table = _tables.get(key)
    if table is None:
        zero = bytearray(m)
        base = crc32c(bytes(zero))
        table = np.zeros((columns.size, 256), np.uint32)
        has_bit = (np.arange(256)[:, None] >> np.arange(8)) & 1 == 1  # (value, bit)
        for k, j in enumerate(columns.tolist()):
            for bit in range(8):
                zero[j] = 1 << bit
                table[k, has_bit[:, bit]] ^= np.uint32(crc32c(bytes(zero)) ^ base)
            zero[j] = 0
        if len(_tables) >= _MAX_TABLES:
            _tables.clear()
        table = _tables[key] = table.ravel()
    return table
