"""Where inputs are: local paths and URIs of object stores and HDFS, read through one layer.

A plain path is always a local path (``out#1`` and ``a?b`` are file names), read with ``os`` so that
the CLI sees exactly what the disk holds (inodes, FIFOs, symlinks). A URI (``s3://``, ``s3a://``,
``gs://``, ``abfs://``, ``abfss://``, ``hdfs://``) is a ``Remote``, read through ``pyarrow.fs``:
S3 takes its endpoint from ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (an S3-compatible store)
and its credentials and region from the standard AWS environment and config files; the other stores
take their own standard settings (``pyarrow.fs.FileSystem.from_uri``). ``file:`` URIs are local paths.

Every read is bounded: listings go folder by folder (callers walk iteratively), small files are read
up to a cap, and log files are read in ranges (``Source``), never mapped, so a file that shrinks
while read is a short read here, not a SIGBUS.
"""

import functools
import os
import re
import stat as st
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:  # pyarrow is imported where a Remote is read: the CLI reading local files starts sooner
    from pyarrow import fs as pafs

#: URI scheme -> the scheme pyarrow knows it by (Hadoop's ``s3a`` is plain S3 to pyarrow).
SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs", "abfs": "abfs", "abfss": "abfss", "hdfs": "hdfs"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: ``meta.properties``, ``quorum-state``, ``leader-epoch-checkpoint``: bytes long in real life.
SMALL_FILE_CAP = 1 << 20


class StorageError(OSError):
    """A path or URI that cannot be read: the message names it and says why, in one line."""


@dataclass(frozen=True, slots=True)
class Remote:
    """A file or folder reached through ``pyarrow.fs``, named from the URI the user gave (``root``)
    and the names below it; what ``Path`` is to a local file, for as much as kraftlog uses of it."""

    root: str
    rel: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "/".join((self.root, *self.rel))

    def __truediv__(self, name: str) -> "Remote":
        return Remote(self.root, (*self.rel, name))

    @property
    def name(self) -> str:
        return self.rel[-1] if self.rel else self.root.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parts(self) -> tuple[str, ...]:
        return (self.root, *self.rel)

    @property
    def parent(self) -> "Remote":
        return Remote(self.root, self.rel[:-1]) if self.rel else self

    def absolute(self) -> "Remote":
        return self

    def located(self) -> "tuple[pafs.FileSystem, str]":
        """The filesystem and the path in it."""
        fs, base = _filesystem(self.root, _env_key())
        return fs, "/".join((base.rstrip("/"), *self.rel)) if self.rel else base


Where = Path | Remote


def resolve(given: str | os.PathLike) -> Where:
    """What the user typed, as a local ``Path`` or a ``Remote``; an unknown ``scheme://`` is refused
    (a folder really named like that is reached as ``./name``)."""
    if isinstance(given, Path | Remote):
        return given
    text = os.fspath(given)
    if text.startswith("file:"):
        return Path(unquote(urlsplit(text).path))
    m = _SCHEME.match(text)
    if m is None:
        return Path(text)
    if m[1].lower() not in SCHEMES:
        raise StorageError(f"{text}: kraftlog reads local paths and {', '.join(f'{s}://' for s in SCHEMES)} "
                           f"URIs, not {m[1]}:// (a local folder named so is ./{text})")
    return Remote(text.rstrip("/") if len(text) > len(m[0]) else text)


def _env_key() -> tuple:
    """The settings a filesystem is made from (a test or a user may change them between runs)."""
    return tuple(os.environ.get(k) for k in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION",
                                              "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID"))


@functools.lru_cache(maxsize=64)
def _filesystem(root: str, _env: tuple) -> "tuple[pafs.FileSystem, str]":
    """A filesystem for a root URI and the root's path in it, once per process and settings."""
    from pyarrow import fs as pafs

    scheme = SCHEMES[_SCHEME.match(root)[1].lower()]
    rest = root[len(_SCHEME.match(root)[0]):]
    try:
        if scheme == "s3":
            return _s3(), rest
        return pafs.FileSystem.from_uri(f"{scheme}://{rest}")
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError, ArrowIOError an OSError
        raise StorageError(f"{root}: cannot reach the store: {_one_line(e)}") from None


def _s3() -> "pafs.S3FileSystem":
    """S3 as boto3 and the AWS CLI would reach it: the endpoint of an S3-compatible store from
    ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``, the region from ``AWS_REGION``/``AWS_DEFAULT_REGION``,
    credentials from the SDK's default chain (environment, config files, instance profile)."""
    options = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options.update(endpoint_override=parts.netloc + parts.path.rstrip("/"), scheme=parts.scheme)
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    from pyarrow import fs as pafs

    return pafs.S3FileSystem(**options)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


@dataclass(frozen=True, slots=True)
class Stat:
    """What a listing or a look-up says of a path: what the job checks a file against before each
    read (size, modification time, and the inode where the file is local)."""

    kind: str  # "file" (regular) | "dir" | "other" (FIFO, device, socket) | "missing"
    size: int = 0
    mtime_ns: int | None = None
    inode: int | None = None


MISSING = Stat("missing")


def _local_stat(s: os.stat_result) -> Stat:
    kind = "file" if st.S_ISREG(s.st_mode) else "dir" if st.S_ISDIR(s.st_mode) else "other"
    return Stat(kind, s.st_size if kind == "file" else 0, s.st_mtime_ns, s.st_ino)


def _remote_stat(info: "pafs.FileInfo") -> Stat:
    from pyarrow import fs as pafs

    kind = {pafs.FileType.File: "file", pafs.FileType.Directory: "dir",
            pafs.FileType.NotFound: "missing"}.get(info.type, "other")
    mtime = info.mtime_ns if kind == "file" else None
    return Stat(kind, info.size or 0 if kind == "file" else 0, mtime)


def stat(where: Where) -> Stat:
    """The path's ``Stat`` (following symlinks); ``MISSING`` if there is nothing there."""
    if isinstance(where, Path):
        try:
            return _local_stat(os.stat(where))
        except (FileNotFoundError, NotADirectoryError):
            return MISSING
        except OSError as e:
            raise StorageError(f"{where}: {e.strerror or e}") from None
    fs, path = where.located()
    try:
        return _remote_stat(fs.get_file_info(path))
    except (OSError, ValueError) as e:
        raise StorageError(f"{where}: {_one_line(e)}") from None


def listdir(where: Where) -> list[tuple[Where, Stat, bool]]:
    """A folder's entries sorted by name: (path, its ``Stat``, whether it is a symlink). Symlinks
    are followed for the ``Stat`` (a dangling one is ``MISSING``)."""
    if isinstance(where, Path):
        out = []
        try:
            with os.scandir(where) as it:
                for e in it:
                    try:
                        s = _local_stat(e.stat())
                    except OSError:
                        s = MISSING
                    out.append((where / e.name, s, e.is_symlink()))
        except OSError as e:
            raise StorageError(f"{where}: {e.strerror or e}") from None
        return sorted(out, key=lambda x: x[0].name)
    from pyarrow import fs as pafs

    fs, path = where.located()
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False))
    except (OSError, ValueError) as e:
        raise StorageError(f"{where}: {_one_line(e)}") from None
    return sorted(((where / i.base_name, _remote_stat(i), False) for i in infos), key=lambda x: x[0].name)


class TooLarge(StorageError):
    """A file that should be bytes long and is not: not read."""


def read_small(where: Where, cap: int = SMALL_FILE_CAP) -> bytes:
    """A small file's bytes; ``TooLarge`` past ``cap`` (nothing past it is read)."""
    with Source(where) as f:
        if f.size > cap:
            raise TooLarge(f"{where}: {f.size} bytes, more than the {cap} such a file can hold")
        return f.read_at(0, f.size)


class Source:
    """An input file open for ranged reads: ``read_at`` returns at most what is asked, fewer bytes
    only where the file ended early (it shrank), never a mapping that faults."""

    def __init__(self, where: Where) -> None:
        self.where = where
        try:
            if isinstance(where, Path):
                self._fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
                s = os.fstat(self._fd)
                self.stat = _local_stat(s)
                self._file = None
            else:
                fs, path = where.located()
                self._fd = None
                self._file = fs.open_input_file(path)
                self.stat = _remote_stat(fs.get_file_info(path))
        except FileNotFoundError:
            raise StorageError(f"{where}: no such file (it was there when the input was listed)") from None
        except (OSError, ValueError) as e:
            raise StorageError(f"{where}: {getattr(e, 'strerror', None) or _one_line(e)}") from None
        if self.stat.kind != "file":
            self.close()
            raise StorageError(f"{where}: not a regular file")
        self.size = self.stat.size

    def read_at(self, offset: int, n: int) -> bytes:
        try:
            if self._fd is not None:
                return os.pread(self._fd, n, offset)
            return self._file.read_at(n, offset)
        except (OSError, ValueError) as e:
            raise StorageError(f"{self.where}: read of {n} bytes at {offset} failed: "
                               f"{getattr(e, 'strerror', None) or _one_line(e)}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        elif self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *_) -> None:
        self.close()
