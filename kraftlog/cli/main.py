"""The ``kraftlog`` command: subcommands, their help, and exit codes (0 clean, 1 data problems, 2 usage)."""

import argparse
import os
import sys
from pathlib import Path

from kraftlog import __version__
from kraftlog.files.paths import LogFile, classify, log_files_under
from kraftlog.files.reader import DEFAULT_MAX_BATCH_BYTES, Limits
from kraftlog.wire.codecs import DEFAULT_MAX_DECOMPRESSED
from kraftlog.wire.crc import IMPLEMENTATION as CRC_IMPLEMENTATION


class UsageError(Exception):
    """A problem with the command line, reported with exit code 2."""


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = units.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if t[-1:] in units else t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 8MiB, 65536)") from None


def expand_paths(paths: list[str]) -> list[LogFile]:
    """Files as given; directories walked for segments and checkpoints in offset order."""
    out: list[LogFile] = []
    for p in paths:
        if os.path.isdir(p):
            found = log_files_under(p)
            if not found:
                print(f"kraftlog: no segments or checkpoints under {p}", file=sys.stderr)
            out.extend(found)
        elif os.path.isfile(p):
            out.append(classify(p))
        else:
            raise UsageError(f"no such file or directory: {p}")
    return out


def _add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-batch-bytes", type=_size, default=DEFAULT_MAX_BATCH_BYTES, metavar="SIZE",
                   help="largest batch accepted; a larger length field counts as corrupt (default 8MiB)")
    p.add_argument("--max-decompressed", type=_size, default=DEFAULT_MAX_DECOMPRESSED, metavar="SIZE",
                   help="cap on one batch's decompressed records, against compression bombs (default 64MiB)")


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(max_batch_bytes=args.max_batch_bytes, max_decompressed=args.max_decompressed)


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

    dump = sub.add_parser("dump", help="print the batches and records of segments and snapshots",
                          description="Print every batch and record of the given files. A directory is "
                          "walked for *.log segments and *.checkpoint snapshots in offset order. "
                          "Exit 0 when clean, 1 when a batch was invalid, bytes were skipped or a record "
                          "could not be decoded, 2 on usage errors.")
    dump.add_argument("paths", nargs="+", metavar="PATH", help="segment, checkpoint, or directory")
    dump.add_argument("--format", choices=["text", "jsonl"], default="text",
                      help="text: kafka-dump-log layout (default); jsonl: one JSON object per line")
    dump.add_argument("--decoder", choices=["auto", "metadata", "raw"], default="auto",
                      help="decode data records as metadata records, or print raw key/value; auto "
                      "decides by location (__cluster_metadata-N, *.checkpoint) and content")
    _add_limits(dump)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if args.command == "dump":
            from kraftlog.cli import dump

            return dump.run(expand_paths(args.paths), args.format, args.decoder, _limits(args))
    except UsageError as e:
        print(f"kraftlog: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
