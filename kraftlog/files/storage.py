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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
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
#: How long a store's client may retry one request before its error is reported.
RETRY_SECONDS = 30


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


def is_uri(text: str) -> bool:
    """Only ``scheme://...`` and ``file:`` are URIs; anything else is a path (``out#1`` and ``a?b`` are
    names of files, never a URL with a fragment or a query)."""
    return bool(_SCHEME.match(text)) or text.startswith("file:")


def is_remote(text: str) -> bool:
    """A URI of a store other than the local filesystem (``file:`` URIs and paths are local)."""
    return is_uri(text) and not text.startswith("file:")


def local(text: str) -> str:
    """The local path a plain path or ``file:`` URI names (``file:/a%20b`` -> ``/a b``), not made absolute."""
    return unquote(urlsplit(text).path) if text.startswith("file:") else text


def resolve(given: str | os.PathLike) -> Where:
    """What the user typed, as a local ``Path`` or a ``Remote``; an unknown ``scheme://`` is refused
    (a folder really named like that is reached as ``./name``)."""
    if isinstance(given, Path | Remote):
        return given
    text = os.fspath(given)
    if text.startswith("file:"):
        return Path(local(text))
    m = _SCHEME.match(text)
    if m is None:
        return Path(text)
    if m[1].lower() not in SCHEMES:
        raise StorageError(f"{text}: kraftlog reads local paths and {', '.join(f'{s}://' for s in SCHEMES)} "
                           f"URIs, not {m[1]}:// (a local folder named so is ./{text})")
    return Remote(text.rstrip("/") if len(text) > len(m[0]) else text)


def filesystem(given: "str | os.PathLike | Where") -> "tuple[pafs.FileSystem, str]":
    """The ``pyarrow.fs`` filesystem and path of a local path or URI, as ``resolve`` reads it: for
    what writes through pyarrow (Parquet, Arrow IPC) to where the user pointed."""
    where = resolve(given)
    if isinstance(where, Remote):
        return where.located()
    from pyarrow import fs as pafs

    return pafs.LocalFileSystem(), str(where.absolute())


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
        if scheme == "gs":  # its client retries for 15 minutes by default (no network: a hang)
            return pafs.GcsFileSystem(retry_time_limit=timedelta(seconds=RETRY_SECONDS)), rest
        return pafs.FileSystem.from_uri(f"{scheme}://{rest}")
    except _failures() as e:
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


def _failures() -> tuple[type[BaseException], ...]:
    """What a store's client raises: pyarrow's errors are ``OSError``, ``ValueError`` or, from the
    Azure and other SDKs, a bare ``ArrowException``."""
    from pyarrow.lib import ArrowException

    return OSError, ValueError, ArrowException


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
    except _failures() as e:
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
    except _failures() as e:
        raise StorageError(f"{where}: {_one_line(e)}") from None
    return sorted(((where / i.base_name, _remote_stat(i), False) for i in infos), key=lambda x: x[0].name)


class TooLarge(StorageError):
    """A file that should be bytes long and is not: not read."""


def read_small(where: Where, cap: int = SMALL_FILE_CAP) -> bytes:
    """A small file's bytes; ``TooLarge`` past ``cap`` (nothing past it is read)."""
    with Source(where) as f:
        if f.size > cap:
            raise TooLarge(f"{where}: {f.size} bytes, more than the {cap} such a file can hold")
        return f.read_at(0, cap)


class Changed(StorageError):
    """A file that is not the one that was listed, or that changed while it was read."""


class Source:
    """An input file for ranged reads, opened at its first use (so that whatever reads it can say
    what went wrong), and checked then against ``expect`` (what a listing saw: size, modification
    time, inode where local). ``read_at`` returns fewer bytes than asked only where the file ended
    early (it shrank): never a mapping that faults."""

    def __init__(self, where: "str | os.PathLike | Where", expect: Stat | None = None) -> None:
        self.where, self.expect = resolve(where), expect
        self._fd: int | None = None
        self._file = None
        self._stat: Stat | None = None

    def _open(self) -> Stat:
        where = self.where
        try:
            if isinstance(where, Path):
                self._fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
                self._stat = _local_stat(os.fstat(self._fd))
            else:
                fs, path = where.located()
                info = fs.get_file_info(path)
                self._stat = _remote_stat(info)
                if self._stat.kind == "file":
                    self._file = fs.open_input_file(path)
        except FileNotFoundError:
            raise self.changed("no such file", "vanished") from None
        except StorageError:
            raise
        except _failures() as e:
            raise StorageError(f"{where}: {getattr(e, 'strerror', None) or _one_line(e)}") from None
        if self._stat.kind == "missing":
            raise self.changed("no such file", "vanished")
        if self._stat.kind != "file":
            self.close()
            raise StorageError(f"{where}: not a regular file")
        if self.expect is not None and (why := _differs(self.expect, self._stat)):
            self.close()
            raise self.changed(why, "is not the file that was listed")
        return self._stat

    @property
    def stat(self) -> Stat:
        return self._stat if self._stat is not None and self.opened else self._open()

    @property
    def opened(self) -> bool:
        return self._fd is not None or self._file is not None

    @property
    def size(self) -> int:
        return self.stat.size

    def changed(self, why: str, what: str = "changed while read") -> "Changed":
        return Changed(f"{self.where}: {what}: {why}" if what != "vanished"
                       else f"{self.where}: {why} (it was there when the input was listed)")

    def read_at(self, offset: int, n: int) -> bytes:
        if not self.opened:
            self._open()
        try:
            if self._fd is not None:
                return os.pread(self._fd, n, offset)
            return self._file.read_at(n, offset)
        except _failures() as e:
            raise StorageError(f"{self.where}: read of {n} bytes at {offset} failed: "
                               f"{getattr(e, 'strerror', None) or _one_line(e)}") from None

    def stream(self, pos: int) -> "Stream":
        """The file from ``pos`` on as a binary file object (``seek``/``read``), for the reader."""
        return Stream(self.read_at, pos)

    def check(self) -> None:
        """``Changed`` if the file is not what it was when opened (size, modification time, inode)."""
        if not self.opened:
            return
        try:
            now = _local_stat(os.stat(self.where)) if self._fd is not None else stat(self.where)
        except FileNotFoundError:
            now = MISSING
        if why := _differs(self._stat, now):
            raise self.changed(why)

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


def _differs(was: Stat, now: Stat) -> str | None:
    """How ``now`` differs from ``was`` (size, modification time, inode where both have one)."""
    if now.kind != was.kind:
        return "it is gone" if now.kind == "missing" else f"it is no longer a {was.kind}"
    if now.size != was.size:
        return f"{was.size} bytes when listed, {now.size} now"
    if was.inode is not None and now.inode is not None and was.inode != now.inode:
        return f"another file (inode {was.inode} when listed, {now.inode} now)"
    if was.mtime_ns is not None and now.mtime_ns is not None and was.mtime_ns != now.mtime_ns:
        return "modified since it was listed (same size)"
    return None


class Stream:
    """``read_at(offset, n)`` from ``start`` on as a binary file object (``seek``/``read``) whose
    position 0 is ``start``: what the files layer's reader reads."""

    def __init__(self, read_at: "Callable[[int, int], bytes]", start: int) -> None:
        self.read_at, self.start, self.pos = read_at, start, start

    def seek(self, pos: int) -> None:
        self.pos = self.start + pos

    def read(self, n: int) -> bytes:
        out = self.read_at(self.pos, n)
        self.pos += len(out)
        return out
