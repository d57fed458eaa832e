"""What the job may write and delete, checked before Spark starts (``claim``).

- The output is never an input, inside one (or inside an input's log dir) or holding one, nor empty,
  nor the filesystem's root, nor a symlink, nor a mount point, nor an existing file (refused even with
  ``--overwrite``: a file named as the output folder is a typo, and the operator removes it themselves).
- An existing output folder is replaced only if kraftlog wrote it: a ``_manifest.json`` of ours (a
  ``run_id``, ``versions.kraftlog`` and ``counts``) and nothing beside the tables, manifest and
  reports it names. An empty folder holds nothing to lose. Anything else needs ``--overwrite``, and
  a run that appends (``--mode append``) adds only to an output kraftlog wrote, never with ``--overwrite``.
- One run at a time writes an output: ``.<name>.lock`` beside it, held with ``flock`` while the run
  lives (the kernel releases it when the process dies, so a killed run never leaves a lock that
  blocks the next), naming the holder (run id, pid, host, start time). A second run is refused (exit 1),
  or with ``--wait-lock SECONDS`` waits that long for the first to end.
- The run holding the lock removes the staging folders (``.<name>.staging-<run_id>``,
  ``.<name>.previous-<run_id>``) that earlier runs onto the same output left when killed: they hold
  decoded records, secrets in clear. Only folders named so, with a UUIDv7 run id that started before
  this run, are removed; the lock says no run that wrote them is alive.

Locking and clean-up are for local filesystems, and shared ones where ``flock`` reaches every host
(NFSv4, or v3 with lockd: Linux maps ``flock`` to NFS locks); a lock is never broken by age, since
the kernel (or the NFS server) releases it with its process. Object stores have no lock here: pyarrow exposes no conditional put
(``If-None-Match``), so two runs onto one bucket prefix are not kept apart (each table's Delta commit
is still atomic, see ``output.DeltaOutput``). The path checks apply, compared by store and key; an
existing prefix is written only if kraftlog wrote it (``not_ours_remote``), and the staging prefixes
``<output>/_staging-<run_id>`` of earlier killed runs are removed when a run starts, with the parts
those runs wrote into the tables' folders that no commit of theirs names (``_remove_orphans``).
"""

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import uuid6

from kraftlog.files.paths import holds, location, read_by
from kraftlog.files.storage import filesystem, is_remote, local
from kraftlog.spark.sink import STAGING, run_of

MANIFEST = "_manifest.json"


class UnsafeOutput(ValueError):
    """An output (or report) the job must not write: refused before any work (exit 2)."""


class OutputLocked(RuntimeError):
    """Another run is writing the same output (exit 1)."""


def staging_name(name: str, run_id: str) -> str:
    """The folder beside output ``name`` that a run writes its tables into."""
    return f".{name}.staging-{run_id}"


def previous_name(name: str, run_id: str) -> str:
    """Where publishing moves the output it replaces, until the new one is in place."""
    return f".{name}.previous-{run_id}"


def new_run_id() -> str:
    """A UUIDv7: run ids sort by start time, and a stale staging folder's name says when its run began."""
    return str(uuid6.uuid7())


def lock_name(name: str) -> str:
    return f".{name}.lock"


def check_report(report: str, inputs: list[str]) -> None:
    """Refuse a report the job could not write or would write into what it reads (an input, or the
    log dir of a metadata folder given as one). A folder that does not exist yet is made when the
    report is written."""
    if is_remote(report):
        raise UnsafeOutput(f"--report {report}: the report is written on the driver's filesystem; give a local path")
    if Path(local(report)).resolve().is_dir():
        raise UnsafeOutput(f"--report {report} is a directory; give the HTML file to write")
    if (given := read_by(report, inputs)) is not None:
        raise UnsafeOutput(f"--report {report} is inside the input {given} (or its log dir); "
                           "reading never writes into an input")


def check_output(output: str, inputs: list[str], overwrite: bool = False, append: bool = False) -> None:
    """Refuse an output whose replacement could delete what kraftlog did not write (see the module);
    an append (``append``) only onto an output kraftlog wrote, or a new one."""
    if not output.strip():
        raise UnsafeOutput(f"--output {output!r} is empty (an unset variable?); give the folder to write")
    if append and overwrite:
        raise UnsafeOutput("--mode append adds runs to an output kraftlog wrote, --overwrite replaces a folder it "
                           "did not write: give one or the other")
    store, where = location(output)
    if where == where.parent:
        raise UnsafeOutput(f"--output {output} is the root of {store or 'the filesystem'}; give a folder in it")
    if (given := holds(output, inputs)) is not None:
        raise UnsafeOutput(f"--output {output} is or holds the input {given}; replacing it would delete the input")
    if (given := read_by(output, inputs)) is not None:
        raise UnsafeOutput(f"--output {output} is inside the input {given} (or its log dir); "
                           "reading never writes into an input")
    if is_remote(output):
        return
    given = os.path.abspath(local(output))
    if os.path.islink(given):
        raise UnsafeOutput(f"--output {output} is a symlink to {where}; give the folder itself")
    if not os.path.lexists(given):
        return
    if not os.path.isdir(given):
        raise UnsafeOutput(f"--output {output} is an existing file, not a folder of tables; kraftlog never "
                           "replaces a file (not even with --overwrite): remove it or give another path")
    if os.path.ismount(given):
        raise UnsafeOutput(f"--output {output} is a mount point, which publishing cannot replace in one rename "
                           "(a copy-then-delete would empty it first); give a folder inside it")
    try:
        foreign = not_ours(Path(given))
    except OSError as e:
        raise UnsafeOutput(f"--output {output}: cannot read it: {e.strerror or e}") from None
    if foreign and not overwrite:
        raise UnsafeOutput(f"--output {output} exists and is not a kraftlog output ({foreign}); {_foreign(append)}")


def _foreign(append: bool) -> str:
    """What to do about an output kraftlog did not write."""
    return "an append adds only to an output kraftlog wrote" if append else "give --overwrite to replace it"


def not_ours(folder: Path) -> str | None:
    """Why ``folder`` is not an output kraftlog wrote, or None if it is one (or is empty)."""
    entries = sorted(p.name for p in folder.iterdir())
    if not entries:
        return None
    try:
        manifest = _ours(json.loads((folder / MANIFEST).read_text()))
    except FileNotFoundError:
        return f"no {MANIFEST}"
    except (OSError, ValueError, KeyError, TypeError):
        return f"{MANIFEST} is not one kraftlog wrote"
    known = {MANIFEST, *manifest["counts"]}
    for report in manifest.get("reports", {}).values():
        path = Path(report.get("path", ""))
        if path.is_relative_to(folder) and path != folder:
            known.add(path.relative_to(folder).parts[0])
    # Hadoop's local filesystem writes a ``.<name>.crc`` checksum beside each file it creates
    extra = [e for e in entries if e not in known and not (e.startswith(".") and e.endswith(".crc")
                                                            and e[1:-4] in known)]
    return f"it holds {extra[0]!r}, which kraftlog did not write" if extra else None


def _ours(manifest: dict) -> dict:
    """``manifest`` if kraftlog wrote it (a run id, its version, the counts of its tables); raises otherwise."""
    run_id, version, counts = manifest["run_id"], manifest["versions"]["kraftlog"], manifest["counts"]
    uuid.UUID(run_id)
    if not isinstance(version, str) or not isinstance(counts, dict):
        raise TypeError
    return manifest


def not_ours_remote(output: str) -> str | None:
    """Why the object-store prefix ``output`` is not an output kraftlog wrote (its Delta tables, its
    manifest, and the staging prefixes of killed runs), or None if it is one or holds nothing."""
    import pyarrow.fs as pafs

    fs, base = filesystem(output)
    entries = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)))
    if not entries:
        return None
    if MANIFEST not in entries:
        return f"no {MANIFEST}"
    try:
        with fs.open_input_stream(f"{base}/{MANIFEST}") as f:
            manifest = _ours(json.loads(f.read(1 << 20)))
    except (OSError, ValueError, KeyError, TypeError):
        return f"{MANIFEST} is not one kraftlog wrote"
    extra = [e for e in entries if e not in {MANIFEST, *manifest["counts"]} and not e.startswith(STAGING)]
    return f"it holds {extra[0]!r}, which kraftlog did not write" if extra else None


@dataclass
class Claim:
    """A run's hold on its output: its run id, the lock (local outputs) and what it cleaned up."""

    key: tuple  # the output's ``location``
    run_id: str
    removed: list[str] = field(default_factory=list)  # stale staging folders removed
    _fd: int | None = None
    _lock: Path | None = None
    _depth: int = 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth:
            return
        _claims.pop(self.key, None)
        if self._fd is not None:
            with contextlib.suppress(OSError):  # unlinked while held: a run that opened it since retries
                os.unlink(self._lock)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *_) -> None:
        self.release()


#: Claims this process holds, by output location: the job's entry claims before Spark starts and
#: ``job.run`` claims again for API users; the second is the first one.
_claims: dict[tuple, Claim] = {}


def claim(output: str, inputs: list[str], overwrite: bool = False, report: str | None = None,
          wait: float = 0, append: bool = False) -> Claim:
    """Check the output (and report), lock it (waiting up to ``wait`` seconds for another run to end)
    and remove stale staging folders; raises ``UnsafeOutput`` (a usage error, or an output parent the
    job cannot write in) or ``OutputLocked``."""
    check_output(output, inputs, overwrite, append)
    if report:
        check_report(report, inputs)
    key = location(output)
    if key in _claims:
        _claims[key]._depth += 1
        return _claims[key]
    held = _claims[key] = Claim(key, new_run_id())
    if is_remote(output):
        try:
            if not overwrite and (foreign := not_ours_remote(output)):
                raise UnsafeOutput(f"--output {output} exists and is not a kraftlog output ({foreign}); "
                                   + ("an append adds only to an output kraftlog wrote" if append
                                      else "give --overwrite to replace its tables"))
            held.removed = _remove_stale_remote(output, held.run_id)
        except BaseException:
            held.release()
            raise
        return held
    target = Path(key[1])
    held._lock = target.parent / lock_name(target.name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        held._fd = _lock(held._lock, output, held.run_id, wait)
    except BaseException as e:
        held.release()
        if isinstance(e, OSError):
            raise UnsafeOutput(f"--output {output}: cannot write in {e.filename or target.parent}: "
                               f"{e.strerror or e}") from None
        raise
    try:
        held.removed = _remove_stale(target, held.run_id)
    except BaseException:
        held.release()
        raise
    return held


def _lock(path: Path, output: str, run_id: str, wait: float) -> int:
    """``path`` opened and flocked, our details written in it; ``OutputLocked`` naming its holder
    if another run holds it for longer than ``wait`` seconds."""
    deadline, told = time.monotonic() + wait, False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace")
            os.close(fd)
            try:
                h = json.loads(holder)
                who = f"run {h['run_id']} (pid {h['pid']} on {h['host']}, started {h['started']})"
            except (ValueError, KeyError, TypeError):
                who = "another run"
            if time.monotonic() >= deadline:
                raise OutputLocked(f"--output {output} is being written by {who}; wait for it to end "
                                   f"(--wait-lock SECONDS) (its lock: {path})") from None
            if not told:
                print(f"kraftlog: waiting up to {wait:g} s for {who} to finish writing {output}", file=sys.stderr,
                      flush=True)
                told = True
            time.sleep(0.2)
            continue
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed it as we opened it: take the new one
    left = os.pread(fd, 4096, 0)
    if left:
        print(f"kraftlog: taking over the lock {path} of a run that ended without releasing it: "
              f"{left.decode(errors='replace').strip()}", file=sys.stderr)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
                              "started": datetime.now(UTC).isoformat()}).encode(), 0)
    return fd


_RUN_FOLDER = re.compile(r"\.(?P<name>.+)\.(?:staging|previous)-(?P<run_id>[0-9a-f-]{36})", re.DOTALL)


def _remove_stale(target: Path, run_id: str) -> list[str]:
    """Remove the staging folders of earlier runs onto ``target`` (see the module); the lock is held."""
    ours = uuid.UUID(run_id).int >> 80  # a UUIDv7 starts with its Unix time in milliseconds
    removed = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for e in entries:
        m = _RUN_FOLDER.fullmatch(e.name)
        if m is None or m["name"] != target.name or not e.is_dir(follow_symlinks=False):
            continue
        try:
            found = uuid.UUID(m["run_id"])
        except ValueError:
            continue
        if found.version != 7 or str(found) != m["run_id"] or found.int >> 80 >= ours:
            continue
        shutil.rmtree(e.path, onerror=_refuse_removal)
        started = datetime.fromtimestamp((found.int >> 80) / 1000, UTC).isoformat(timespec="seconds")
        print(f"kraftlog: removed {e.path}, left by run {found} (started {started}) that did not finish; "
              "it held decoded records", file=sys.stderr)
        removed.append(e.path)
    return removed


def _refuse_removal(_fn, path, exc) -> None:
    err = exc if isinstance(exc, OSError) else exc[1]
    raise OSError(err.errno or errno.EIO, f"cannot remove the stale staging folder {path}: {err.strerror or err}")


def _remove_stale_remote(output: str, run_id: str) -> list[str]:
    """Remove the staging prefixes that earlier runs onto the object-store ``output`` left when killed
    (named ``_staging-<UUIDv7>``, started before ``run_id``); the prefixes removed. There is no lock
    on an object store: a run still writing one of them would fail."""
    import pyarrow.fs as pafs

    fs, base = filesystem(output)
    ours = uuid.UUID(run_id).int >> 80
    removed = []
    for info in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
        name = info.base_name
        try:
            found = uuid.UUID(name.removeprefix(STAGING)) if name.startswith(STAGING) else None
        except ValueError:
            continue
        if found is None or found.version != 7 or found.int >> 80 >= ours or info.type != pafs.FileType.Directory:
            continue
        fs.delete_dir(info.path)
        print(f"kraftlog: removed {output.rstrip('/')}/{name}, left by run {found} that did not finish; it held "
              "decoded records", file=sys.stderr)
        removed.append(f"{output.rstrip('/')}/{name}")
    if removed:
        _remove_orphans(output, {p.rsplit("/", 1)[1].removeprefix(STAGING) for p in removed})
    return removed


def _remove_orphans(output: str, run_ids: set[str]) -> list[str]:
    """Remove the Parquet parts that the killed runs ``run_ids`` wrote into the object-store output's
    table folders (named with their run id, ``sink.run_of``) and that no Delta commit names: a table
    with a commit of one of those runs (killed between its commits) keeps its parts, which that version
    reads, and a table whose log cannot be read keeps every part. The parts removed."""
    import pyarrow.fs as pafs
    from deltalake import DeltaTable

    from kraftlog.spark.output import delta_uri, storage_options  # the output's layer, which imports this one

    fs, base = filesystem(output)
    options, removed = storage_options(output), []
    for table in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
        if table.type != pafs.FileType.Directory or table.base_name.startswith(("_", ".")):
            continue
        uri = delta_uri(f"{output.rstrip('/')}/{table.base_name}")
        try:
            committed = {h.get("kraftlog.run_id") for h in DeltaTable(uri, storage_options=options).history()} \
                if DeltaTable.is_deltatable(uri, storage_options=options) else set()
        except Exception as e:  # delta-rs raises its own errors (DeltaError, OSError, ...)
            print(f"kraftlog: kept what killed runs wrote into {uri}: its Delta log cannot be read ({e})",
                  file=sys.stderr)
            continue
        for part in fs.get_file_info(pafs.FileSelector(table.path, recursive=True)):
            if part.type == pafs.FileType.File and run_of(part.base_name) in run_ids - committed:
                fs.delete_file(part.path)
                removed.append(f"{output.rstrip('/')}/{part.path[len(base) + 1:]}")
    if removed:
        print(f"kraftlog: removed {len(removed)} parts that those runs wrote into {output} and no commit names",
              file=sys.stderr)
    return removed


#: An OS error as Python or pyarrow prints it, also inside a Python worker's traceback that Spark passes
#: on as text: its number, and the file it names if it names one.
_ERRNO = re.compile(r"\[errno (\d+)\][^\n]*?(?:: '([^'\n]*)')?$", re.MULTILINE | re.IGNORECASE)


def one_line(e: BaseException, where: str) -> str:
    """Why a run failed, in one line: an OS error's path (``where`` if it names none) and reason
    (ENOSPC, EROFS, EACCES), also where it comes back from the JVM or a Python worker as text;
    otherwise the error's first line (a Java error's, past py4j's "An error occurred while calling ...")."""
    if isinstance(e, OSError) and e.errno:
        return f"{e.filename or where}: {os.strerror(e.errno)}"
    text = str(e)
    if m := _ERRNO.search(text):
        return f"{m[2] or where}: {os.strerror(int(m[1]))}"
    lines = [line.strip().removeprefix(": ") for line in text.splitlines()
             if line.strip() and not line.startswith(("\tat ", "An error occurred while calling"))]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:500]
