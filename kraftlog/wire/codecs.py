"""The four compression codecs of v2 batches, each bounded by a cap on decompressed size.

A decompressor never produces more than ``max_bytes + 1`` bytes, so a bomb costs at most the cap
in memory and is reported as DecompressedSizeError instead of exhausting the machine.
"""

import gzip
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from kraftlog.wire.errors import CompressionError, DecompressedSizeError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS = {name: codec for codec, name in CODEC_NAMES.items()}

#: Default cap on the decompressed size of one batch's records (the fuzz and bomb tests lower it).
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_CHUNK_LEN = struct.Struct(">i")


def _too_big(codec: str, cap: int) -> DecompressedSizeError:
    return DecompressedSizeError(f"{codec} payload inflates past the cap of {cap} bytes")


def _bounded(codec: str, d, errors: type[Exception] | tuple, data: bytes, cap: int) -> bytes:
    """Inflate with a one-shot decompressor object that stops at ``cap + 1`` bytes."""
    try:
        out = d.decompress(data, cap + 1)
    except errors as e:
        raise CompressionError(f"{codec}: {e}") from None
    if len(out) > cap:
        raise _too_big(codec, cap)
    if not d.eof:
        raise CompressionError(f"{codec}: stream is truncated")
    return out


def _gunzip(data: bytes, cap: int) -> bytes:
    return _bounded("gzip", zlib.decompressobj(16 + zlib.MAX_WBITS), zlib.error, data, cap)


def _snappy_raw(block: bytes, cap: int, produced: int = 0) -> bytes:
    # The raw snappy preamble states the uncompressed length: check it before inflating.
    n, shift, i = 0, 0, 0
    while i < min(len(block), 5):
        b = block[i]
        n |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            break
        shift += 7
    if produced + n > cap:
        raise _too_big("snappy", cap)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CompressionError(f"snappy: {e}") from None


def _unsnappy(data: bytes, cap: int) -> bytes:
    """Kafka writes snappy with xerial snappy-java's stream framing; plain raw snappy is accepted too."""
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_raw(data, cap)
    if len(data) < _XERIAL_HEADER.size:
        raise CompressionError("snappy: xerial header is truncated")
    pos = _XERIAL_HEADER.size
    out = bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError(f"snappy: chunk length truncated at byte {pos}")
        (n,) = _CHUNK_LEN.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CompressionError(f"snappy: chunk of {n} bytes at byte {pos - 4} overruns the payload")
        out += _snappy_raw(data[pos : pos + n], cap, len(out))
        pos += n
    return bytes(out)


def _unlz4(data: bytes, cap: int) -> bytes:
    return _bounded("lz4", lz4.frame.LZ4FrameDecompressor(), RuntimeError, data, cap)


def _unzstd(data: bytes, cap: int) -> bytes:
    # Streaming: Kafka's frames need not record a content size; several frames may follow each other.
    out = bytearray()
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        while True:
            chunk = reader.read(min(1 << 20, cap + 1 - len(out)))
            if not chunk:
                break
            out += chunk
            if len(out) > cap:
                raise _too_big("zstd", cap)
    except zstandard.ZstdError as e:
        raise CompressionError(f"zstd: {e}") from None
    return bytes(out)


_DECOMPRESSORS = {GZIP: _gunzip, SNAPPY: _unsnappy, LZ4: _unlz4, ZSTD: _unzstd}


def decompress(codec: int, data: bytes, max_bytes: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Inflate one batch's records; raises CompressionError or DecompressedSizeError."""
    if codec == NONE:
        return data
    fn = _DECOMPRESSORS.get(codec)
    if fn is None:
        raise CompressionError(f"unknown compression codec id {codec}")
    return fn(bytes(data), max_bytes)


def compress(codec: int, data: bytes) -> bytes:
    """Compress records the way Kafka's producers frame them (xerial snappy, lz4 frame, zstd frame)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, mtime=0)
    if codec == SNAPPY:
        out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1))
        for i in range(0, len(data), 32 * 1024):
            block = bytes(cramjam.snappy.compress_raw(data[i : i + 32 * 1024]))
            out += _CHUNK_LEN.pack(len(block)) + block
        return bytes(out)
    if codec == LZ4:
        return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, content_checksum=False)
    if codec == ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    raise CompressionError(f"unknown compression codec id {codec}")
