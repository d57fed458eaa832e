"""A progress bar on stderr for long commands, by bytes of log files read; silent unless on a terminal.

It watches what the process reads rather than being told: an audit hook sees each log file
opened, and on Linux ``/proc/self/fdinfo`` gives the read position of each one still open. So
no reader or replay loop knows about it, and a command opts in with one decorator::

    @progress.shown("paths")
    def run(args) -> int: ...

Where ``/proc`` is missing the bar moves a file at a time.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable

from kraftlog.files.paths import classify, log_files_under

DELAY = 0.5  # a command done sooner never shows a bar
INTERVAL = 0.2


def on_terminal(streams_stdout: bool) -> bool:
    """Only when stderr is a terminal and stdout is not piped; a command that streams its data to
    stdout shows no bar over that data on the same terminal."""
    if not sys.stderr.isatty():
        return False
    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (OSError, ValueError):
        return False
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return False
    return not (streams_stdout and sys.stdout.isatty())


def log_file_sizes(paths: Iterable[str], all_partitions: bool = False) -> dict[str, int]:
    """Real path -> size of every segment and checkpoint the command may read under ``paths``."""
    files = []
    for p in paths:
        files += log_files_under(p, all_partitions) if os.path.isdir(p) else [classify(p)] if os.path.isfile(p) else []
    return {os.path.realpath(f.path): f.path.stat().st_size for f in files if f.kind != "other"}


def _open_positions(watched: dict[str, int]) -> dict[str, int] | None:
    """Read position of each watched file the process has open (Linux), or None without /proc."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    out: dict[str, int] = {}
    for fd in fds:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
            if path in watched:
                with open(f"/proc/self/fdinfo/{fd}") as info:
                    pos = int(info.readline().split()[1])
                out[path] = max(out.get(path, 0), pos)
        except (OSError, ValueError, IndexError):
            continue  # closed meanwhile
    return out


class _Terminal:
    """Shares the terminal line between the bar and the command's own writes: a write first clears
    the bar, and the bar is drawn only while the cursor is at the start of a line."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.shown = False
        self.line_start = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def draw(self, line: str) -> None:
        with self.lock:
            if self.line_start:
                self.stream.write("\r\x1b[K" + line)
                self.stream.flush()
                self.shown = True


class _Guarded:
    """A text stream whose writes keep the bar out of the way (stands in for sys.stdout/stderr)."""

    def __init__(self, stream, terminal: _Terminal) -> None:
        self._stream, self._terminal = stream, terminal

    def write(self, s: str) -> int:
        with self._terminal.lock:
            self._terminal.clear()
            n = self._stream.write(s)
            if s:
                self._stream.flush()
                self._terminal.line_start = s.endswith("\n")
            return n

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class Bar:
    """Bytes read of ``watched`` files, drawn every INTERVAL after DELAY by a daemon thread."""

    _active: Bar | None = None
    _hooked = False

    def __init__(self, watched: dict[str, int], label: str, stream=None, delay: float = DELAY) -> None:
        self.watched = watched
        self.total = sum(watched.values()) or 1
        self.label = label
        self.delay = delay
        self.opened: set[str] = set()
        self.reached: dict[str, int] = {}
        # the bar's own escape sequences bypass main's escaping of what commands print
        self.terminal = _Terminal(stream or getattr(sys.stderr, "unescaped", sys.stderr))
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kraftlog-progress", daemon=True)

    @classmethod
    def _audit(cls, event: str, args: tuple) -> None:
        bar = cls._active
        if bar is None or event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        if path in bar.watched:
            bar.opened.add(path)

    def read(self) -> int:
        """Files opened and closed count whole; open ones up to their read position."""
        positions = _open_positions(self.watched) or {}
        done = 0
        for path in list(self.opened):
            size = self.watched[path]
            at = positions.get(path, size)
            self.reached[path] = max(self.reached.get(path, 0), min(at, size))
            done += self.reached[path]
        return done

    def line(self, done: int, width: int) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = done / elapsed
        share = min(done / self.total, 1.0)
        left = f"{(self.total - done) / rate:5.0f}s left" if rate > 0 else " " * 11
        total = f"{self.total / 2**20:,.0f}"
        tail = f" {share:4.0%} {done / 2**20:>{len(total)},.0f}/{total} MiB {rate / 2**20:6,.1f} MiB/s {left}"
        room = max(width - len(self.label) - len(tail) - 4, 10)
        filled = int(room * share)
        return f"{self.label} [{'#' * filled}{'.' * (room - filled)}]{tail}"[: width - 1]

    def _loop(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set():
            self.terminal.draw(self.line(self.read(), shutil.get_terminal_size().columns))
            self._stop.wait(INTERVAL)

    def __enter__(self) -> Bar:
        if not Bar._hooked:
            sys.addaudithook(Bar._audit)  # cannot be removed; inert while no bar is active
            Bar._hooked = True
        Bar._active = self
        self._streams = sys.stdout, sys.stderr
        sys.stderr = _Guarded(sys.stderr, self.terminal)
        if sys.stdout.isatty():
            sys.stdout = _Guarded(sys.stdout, self.terminal)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        Bar._active = None
        with self.terminal.lock:
            self.terminal.clear()
        sys.stdout, sys.stderr = self._streams


def shown(attr: str, *, streams_stdout: bool = False) -> Callable:
    """Decorate a command's ``run(args)``: a bar over the log files under ``args.<attr>`` (a path or
    a list of paths) while it runs, when ``on_terminal``; otherwise ``run`` is left alone."""
    def wrap(run: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(run)
        def run_with_bar(args, *rest, **kw) -> int:
            if not on_terminal(streams_stdout):
                return run(args, *rest, **kw)
            paths = getattr(args, attr)
            paths = [paths] if isinstance(paths, str) else list(paths)
            with Bar(log_file_sizes(paths, getattr(args, "all_partitions", False)), f"kraftlog {args.command}"):
                return run(args, *rest, **kw)
        return run_with_bar
    return wrap
