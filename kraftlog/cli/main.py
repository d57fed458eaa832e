"""The ``kraftlog`` command: subcommands, their help, and exit codes (0 clean, 1 data problems, 2 usage)."""

import argparse
import contextlib
import os
import sys
from importlib import import_module

from kraftlog import __version__
from kraftlog.cli import render
from kraftlog.files.reader import (
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_RECORDS_PER_BATCH,
    FileChangedError,
    Limits,
    size_bytes,
)
from kraftlog.wire.codecs import DEFAULT_MAX_DECOMPRESSED
from kraftlog.wire.crc import IMPLEMENTATION as CRC_IMPLEMENTATION

#: Subcommand modules of ``kraftlog.cli``; each has ``add_parser(subparsers)`` and ``run(args) -> int``.
COMMANDS = ["dump", "inspect", "replay", "metadata", "diff", "history", "report", "generate", "partitions", "quorum",
            "shell"]


class UsageError(Exception):
    """A problem with the command line, reported with exit code 2."""


class Refused(Exception):
    """An answer the input cannot give truthfully (damaged, missing, or not there), exit code 1."""


def parse_size(text: str) -> int:
    try:
        return size_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-batch-bytes", type=parse_size, default=DEFAULT_MAX_BATCH_BYTES, metavar="SIZE",
                   help="largest batch accepted; a larger length field counts as corrupt (default 8MiB)")
    p.add_argument("--max-decompressed", type=parse_size, default=DEFAULT_MAX_DECOMPRESSED, metavar="SIZE",
                   help="cap on one batch's decompressed records, against compression bombs (default 64MiB)")
    p.add_argument("--max-records-per-batch", type=int, default=DEFAULT_MAX_RECORDS_PER_BATCH, metavar="N",
                   help="a batch declaring more records is reported, not expanded (default 10000, Kafka's "
                   "QuorumController.MAX_RECORDS_PER_BATCH)")


def limits_of(args: argparse.Namespace) -> Limits:
    return Limits(max_batch_bytes=args.max_batch_bytes, max_decompressed=args.max_decompressed,
                  max_records_per_batch=args.max_records_per_batch)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraftlog",
        description="Read Kafka KRaft __cluster_metadata logs from disk: dump segments and snapshots, "
        "replay the cluster's metadata to any offset or time.",
    )
    parser.add_argument("--version", action="version",
                        version=f"kraftlog {__version__} (CRC-32C: {CRC_IMPLEMENTATION}; "
                                f"Python {sys.version.split()[0]})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for name in COMMANDS:
        import_module(f"kraftlog.cli.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = render.TerminalSafe(sys.stdout), render.TerminalSafe(sys.stderr)
    try:
        return _run(args)
    finally:
        sys.stdout, sys.stderr = streams


def _run(args: argparse.Namespace) -> int:
    """The subcommand, its failures as one line on stderr and an exit code."""
    try:
        status = import_module(f"kraftlog.cli.{args.command}").run(args)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, not at exit
        return status
    except UsageError as e:
        print(f"kraftlog: {e}", file=sys.stderr)
        return 2
    except Refused as e:
        print(f"kraftlog: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): not an error of ours
        _discard_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except FileChangedError as e:
        print(f"kraftlog: {render.printable(str(e))}", file=sys.stderr)
        return 1
    except OSError as e:
        # a file the command needed could not be opened, read or written (permission denied, no space
        # left, a read-only folder, not a regular file): one line naming it, exit 1
        if e.filename is None:  # stdout itself (a full disk): what is still buffered cannot be written
            _discard_stdout()
        print(render.printable(f"kraftlog: {e.filename}: {e.strerror}" if e.filename
                               else f"kraftlog: writing the output: {e.strerror or e}"), file=sys.stderr)
        return 1


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit raises nothing more."""
    with contextlib.suppress(OSError, ValueError):  # ValueError: not a real file (tests' StringIO)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    # run as ``python -m``: the subcommands import this module as ``kraftlog.cli.main``, and only
    # that module's UsageError and Refused are the ones they raise
    from kraftlog.cli import main as imported

    sys.exit(imported.main())
