"""``kraftlog shell``: kafka-metadata-shell's ``/image`` tree at any point of the log, with time travel.

Also the one place where ``partitions``, ``quorum`` and ``shell`` choose the node copy and the
point (``add_point_options``, ``state_of``, ``open_log``): ``cli.target`` decides both.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kraftlog.cli import main, target
from kraftlog.cli.render import dumps, iso_time
from kraftlog.files.copies import Log
from kraftlog.files.reader import Limits
from kraftlog.state.rebuild import Rebuilt

# --- choosing the copy and the point (shared with partitions and quorum) ----------------------


def add_point_options(p) -> None:
    """PATH, --node, --no-redact, limits, and an optional --offset/--time (default: the log's end)."""
    target.add_node_args(p)
    target.add_point_args(p, required=False)


def limits(args) -> Limits:
    return main.limits_of(args)


def open_log(args) -> Log:
    """The log PATH, --cluster and --node choose: every copy assembled, or one (``target.open_log``)."""
    return target.open_log(args)


def state_of(args) -> tuple[Rebuilt, Log | None] | None:
    """The image at --offset/--time (the end without them) and the copy it came from (None for a
    single .checkpoint PATH). None, after one line on stderr, when the point has no state: an
    empty image is never shown as the cluster's."""
    if target.Path(args.path).is_file():
        built, node = target.state_at(args, args.offset, args.time), None
    else:
        node = open_log(args)
        built = target.state_at(args, args.offset, args.time, log=node)
    if built.image.provenance.offset < 0 and built.image.transaction is None:
        print("kraftlog: no record of the log lies at or before that point: there is no state to show",
              file=sys.stderr)
        return None
    return built, node


def report(built: Rebuilt) -> int:
    """How the state was reached and its problems, on stderr, as ``replay`` says them."""
    return target.report(built)


def columns(rows: list[tuple], indent: str = "") -> str:
    """Rows of cells as aligned text columns (the first row is the header)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in rows)


# --- the command -------------------------------------------------------------------------------


def add_parser(sub) -> None:
    p = sub.add_parser(
        "shell", help="kafka-metadata-shell's /image tree at any point, with time travel (at, changes, diff)",
        description="Browse the metadata image as kafka-metadata-shell lays it out (ls, cd, pwd, cat, find, "
        "tree), at any offset or time, and move through the log: 'at N|T|end' moves the image, 'changes' "
        "lists the records that changed a node, 'next'/'prev' jump to its next or previous change, 'diff' "
        "compares with another point. Without --offset/--time it starts at the end of the log. Commands "
        "come from -c 'cmd; cmd', else from standard input when it is not a terminal, else interactively "
        "(tab completion, history). Type 'help' for the commands.")
    add_point_options(p)
    p.add_argument("-c", dest="commands", metavar="'CMD; CMD'", help="run these commands and exit")


def _split(line: str) -> list[list[str]]:
    """Commands of a line, separated by ``;`` outside quotes."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
    lexer.whitespace_split = True
    commands, words = [], []
    for token in lexer:
        if token == ";":
            commands.append(words)
            words = []
        else:
            words.append(token)
    return [c for c in commands + [words] if c]


@dataclass(slots=True)
class NodeChange:
    """A record after which the node under a path differs."""

    offset: int
    timestamp: int
    epoch: int
    text: str  # the record, as ``history`` prints it


class CommandError(Exception):
    """A command that cannot do what it was asked; its message is one line."""


class Console:
    """The shell's state (a cursor on the log and a working directory) and its commands."""

    def __init__(self, node: Log, limits: Limits, redact: bool) -> None:
        from kraftlog.state.cursor import Cursor

        self.node, self.limits, self.redact = node, limits, redact
        self.cursor = Cursor(node, limits)
        self.cwd: list[str] = ["image"]
        self.status = 0
        self._tree: dict | None = None
        self._changes: dict[tuple[str, ...], list[NodeChange]] = {}
        self.commands: dict[str, tuple[Callable[[list[str]], None], str]] = {
            "ls": (self.ls, "ls [-l] [PATH...]      list a directory (-l: with values)"),
            "cd": (self.cd, "cd [PATH]              change directory (default /image)"),
            "pwd": (self.pwd, "pwd                    print the working directory"),
            "cat": (self.cat, "cat PATH...            a node as JSON (secrets redacted unless --no-redact)"),
            "find": (self.find, "find [PATH] [-name GLOB]  every path under PATH"),
            "tree": (self.tree, "tree [PATH]            a node and everything below it"),
            "at": (self.at, "at N|T|end             move the image to offset N, time T, or the log's end"),
            "changes": (self.changes, "changes [PATH]         the records that changed the node (offset, time)"),
            "next": (self.next, "next [PATH]            move to the node's next change"),
            "prev": (self.prev, "prev [PATH]            move to the node's previous change"),
            "diff": (self.diff, "diff N|T|end           what differs between now and another point"),
            "help": (self.help, "help                   this list"),
            "exit": (self.exit, "exit                   leave (also Ctrl-D)"),
        }

    # --- running --------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")

    def fail(self, message: str) -> None:
        """An error line on stderr; a script run ends with exit 1."""
        print(f"kraftlog shell: {message}", file=sys.stderr)
        self.status = max(self.status, 1)

    def run_line(self, line: str) -> bool:
        """Run the commands of one line; False once ``exit`` was given."""
        try:
            commands = _split(line)
        except ValueError as e:
            self.fail(f"cannot parse the line: {e}")
            return True
        for words in commands:
            entry = self.commands.get(words[0])
            if entry is None:
                self.fail(f"{words[0]}: unknown command (try help)")
                continue
            try:
                entry[0](words[1:])
            except CommandError as e:
                self.fail(f"{words[0]}: {e}")
            except _Exit:
                return False
        return True

    def prompt(self) -> str:
        p = self.cursor.image.provenance
        return f"[offset {p.offset} {iso_time(p.timestamp) or '-'} epoch {p.epoch}] /{'/'.join(self.cwd)}> "

    # --- the tree -------------------------------------------------------------------------------

    @property
    def root(self) -> dict:
        if self._tree is None:
            from kraftlog.state.tree import image_tree

            self._tree = {"image": image_tree(self.cursor.image, self.redact)}
        return self._tree

    def resolve(self, path: str | None) -> list[str]:
        """The parts of an absolute or relative path; ``..`` stops at the root."""
        parts = [] if path and path.startswith("/") else list(self.cwd)
        for name in (path or "").split("/"):
            if name in ("", "."):
                continue
            if name == "..":
                parts = parts[:-1]
            else:
                parts.append(name)
        return parts

    def lookup(self, parts: list[str], path: str):
        node = self.root
        for name in parts:
            if not isinstance(node, dict) or name not in node:
                raise CommandError(f"{path}: No such file or directory.")
            node = node[name]
        return node

    def _path_arg(self, args: list[str]) -> tuple[list[str], str]:
        path = args[0] if args else "/" + "/".join(self.cwd)
        return self.resolve(path), path

    # --- kafka-metadata-shell's commands ----------------------------------------------------------

    def ls(self, args: list[str]) -> None:
        long = "-l" in args
        paths = [a for a in args if a != "-l"] or ["."]
        for path in paths:
            node = self.lookup(self.resolve(path), path)
            if len(paths) > 1:
                self.say(f"{path}:")
            if not isinstance(node, dict):
                self.say(path.rstrip("/").rsplit("/", 1)[-1] + (f"  {node}" if long else ""))
                continue
            for name in sorted(node):
                child = node[name]
                if not long:
                    self.say(name)
                elif isinstance(child, dict):
                    self.say(f"d  {name}/  ({len(child)} entries)")
                else:
                    self.say(f"-  {name}  {child}")

    def cd(self, args: list[str]) -> None:
        parts = self.resolve(args[0]) if args else ["image"]
        if not isinstance(self.lookup(parts, args[0] if args else "/image"), dict):
            raise CommandError(f"{args[0]}: Not a directory.")
        self.cwd = parts

    def pwd(self, args: list[str]) -> None:
        self.say("/" + "/".join(self.cwd))

    def cat(self, args: list[str]) -> None:
        from kraftlog.state.tree import node_json

        if not args:
            raise CommandError("which node? (cat PATH)")
        for path in args:
            parts = self.resolve(path)
            self.lookup(parts, path)
            if parts[:1] != ["image"]:
                raise CommandError(f"{path}: Is a directory.")
            self.say(json.dumps(node_json(self.cursor.image, parts[1:], self.redact), indent=2))

    def find(self, args: list[str]) -> None:
        glob = None
        if "-name" in args:
            i = args.index("-name")
            if i + 1 >= len(args):
                raise CommandError("-name needs a pattern")
            glob = args[i + 1]
            args = args[:i] + args[i + 2:]
        parts, path = self._path_arg(args)
        start = self.lookup(parts, path)

        def walk(node, at: list[str]) -> Iterable[str]:
            if glob is None or (at and fnmatch.fnmatchcase(at[-1], glob)):
                yield "/" + "/".join(at)
            if isinstance(node, dict):
                for name in sorted(node):
                    yield from walk(node[name], at + [name])

        for found in walk(start, parts):
            self.say(found)

    def tree(self, args: list[str]) -> None:
        from kraftlog.state.tree import render_node

        parts, path = self._path_arg(args)
        sys.stdout.write(render_node(self.lookup(parts, path)))

    def help(self, args: list[str]) -> None:
        for _, text in self.commands.values():
            self.say(text)
        self.say("PATHs are absolute or relative to the working directory; T is an ISO-8601 time (UTC unless it "
                 "says) or t:EPOCH_MS. Commands may be joined with ';'.")

    def exit(self, args: list[str]) -> None:
        raise _Exit

    # --- time travel ----------------------------------------------------------------------------

    def _point(self, text: str):
        from kraftlog.state.cursor import END, Point

        if text == "end":
            return END
        try:
            offset, time_ms = target.point(text)
        except ValueError as e:
            raise CommandError(str(e)) from None
        return Point(offset, time_ms)

    def move(self, point) -> None:
        """Move the image to ``point``; the working directory stays where it still exists."""
        from kraftlog.state.cursor import Unanswerable

        try:
            built = self.cursor.move(point)
        except Unanswerable as e:
            stays = "" if self.cursor.lost else f"; the image stays at offset {self.cursor.image.provenance.offset}"
            raise CommandError(f"{e}{stays}") from None
        self._tree = None
        self.status = max(self.status, report(built))
        while len(self.cwd) > 1 and not self._exists(self.cwd):
            self.cwd = self.cwd[:-1]

    def _exists(self, parts: list[str]) -> bool:
        try:
            return isinstance(self.lookup(parts, ""), dict)
        except CommandError:
            return False

    def at(self, args: list[str]) -> None:
        if len(args) != 1:
            raise CommandError("at N|T|end")
        self.move(self._point(args[0]))

    def node_changes(self, parts: list[str]) -> list[NodeChange]:
        """Every record of the log after which the node under ``parts`` differs (cached per path).

        Replays from where the log starts on disk, as ``history`` does, comparing the node's JSON
        after each record; a transaction's records change it at their EndTransaction."""
        key = tuple(parts)
        if key in self._changes:
            return self._changes[key]
        from kraftlog.files.records import ReadProblems
        from kraftlog.schema import MetadataRecord
        from kraftlog.schema.redact import redact
        from kraftlog.state.rebuild import earliest_base, log_entries, starting_point
        from kraftlog.state.tree import node_json

        if parts[:1] != ["image"]:
            raise CommandError("only nodes under /image change")
        problems = ReadProblems()
        image, start, described = starting_point(self.node, None, None, earliest_base(self.node) or "none", self.limits,
                                                 problems)

        def value() -> str | None:
            try:
                return dumps(node_json(image, parts[1:], self.redact))
            except KeyError:
                return None

        watch_every = parts[1:2] in ([], ["provenance"])  # these change with every record
        found: list[NodeChange] = []
        before = value()
        for e in log_entries(self.node, start, self.limits, problems):
            image.apply(e.record, e.offset, e.timestamp, e.epoch)
            if not watch_every and (not isinstance(e.record, MetadataRecord) or e.record.type == "NO_OP_RECORD"):
                continue
            after = value()
            if after != before:
                shown = redact(e.record) if self.redact else e.record
                found.append(NodeChange(e.offset, e.timestamp, e.epoch,
                                        f"{e.record.type} {dumps(shown.to_json().get('data', {}))}"))
                before = after
        print(f"kraftlog: changes of /{'/'.join(parts)} from {described}: {len(found)}", file=sys.stderr)
        for m in problems.messages:
            self.fail(f"problem: {m}")
        self._changes[key] = found
        return found

    def changes(self, args: list[str]) -> None:
        parts, _ = self._path_arg(args)
        here = self.cursor.image.provenance.offset
        found = self.node_changes(parts)
        for i, c in enumerate(found):
            if c.offset > here and (i == 0 or found[i - 1].offset < here):
                self.say(f"  -- the image is at offset {here} --")
            mark = "*" if c.offset == here else " "  # the image is right after this change
            self.say(f"{mark} offset {c.offset} {iso_time(c.timestamp)} epoch {c.epoch} {c.text}")

    def _jump(self, args: list[str], forward: bool) -> None:
        from kraftlog.state.cursor import Point

        parts, path = self._path_arg(args)
        here = self.cursor.image.provenance.offset
        offsets = [c.offset for c in self.node_changes(parts)]
        targets = [o for o in offsets if o > here] if forward else [o for o in offsets if o < here]
        if not targets:
            raise CommandError(f"{path}: no {'later' if forward else 'earlier'} change than offset {here}")
        self.move(Point(offset=targets[0] if forward else targets[-1]))

    def next(self, args: list[str]) -> None:
        self._jump(args, forward=True)

    def prev(self, args: list[str]) -> None:
        self._jump(args, forward=False)

    def diff(self, args: list[str]) -> None:
        from kraftlog.cli.diff import changes_text
        from kraftlog.state.cursor import Cursor, Unanswerable
        from kraftlog.state.diff import diff

        if len(args) != 1:
            raise CommandError("diff N|T|end")
        other = Cursor(self.node, self.limits)
        try:
            built = other.move(self._point(args[0]))
        except Unanswerable as e:
            raise CommandError(str(e)) from None
        now, then = self.cursor.image.provenance.offset, built.image.provenance.offset
        self.say(f"from offset {now} (now) to offset {then}:")
        self.say("\n".join(changes_text(diff(self.cursor.image, built.image, self.redact))))


class _Exit(Exception):
    """``exit`` was given."""


def _interactive(console: Console) -> None:
    """prompt_toolkit's line editor: completion of commands and paths, history, Ctrl-C, Ctrl-D."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import InMemoryHistory

    class _Completer(Completer):
        def get_completions(self, document, complete_event):
            before = document.text_before_cursor
            words = before.rsplit(";", 1)[-1].lstrip().split(" ")
            if len(words) == 1:
                for name in console.commands:
                    if name.startswith(words[0]):
                        yield Completion(name, -len(words[0]))
                return
            word = words[-1]
            head, _, stem = word.rpartition("/")
            try:
                node = console.lookup(console.resolve(head + "/" if head or word.startswith("/") else "."), head)
            except CommandError:
                return
            if isinstance(node, dict):
                for name in sorted(node):
                    if name.startswith(stem):
                        suffix = "/" if isinstance(node[name], dict) else ""
                        yield Completion(name + suffix, -len(stem))

    session = PromptSession(history=InMemoryHistory(), completer=_Completer(), complete_while_typing=False)
    while True:
        try:
            line = session.prompt(console.prompt())
        except KeyboardInterrupt:
            continue  # Ctrl-C drops the line
        except EOFError:
            return  # Ctrl-D
        try:
            if not console.run_line(line):
                return
        except KeyboardInterrupt:
            console.fail("interrupted")
            if console.cursor.lost:  # stopped halfway through a move: back to the last point
                console.run_line(f"at {_point_text(console.cursor.point)}")


def run(args) -> int:
    from kraftlog.state.cursor import END, Point

    if target.Path(args.path).is_file():
        raise main.UsageError("shell reads a log dir (time travel needs the log), not a single file")
    if args.base != "auto":
        raise main.UsageError("shell starts each move from the snapshot at or below it; --base is not taken")
    console = Console(open_log(args), limits(args), not args.no_redact)
    start = END if args.offset is None and args.time is None else Point(args.offset, args.time)
    try:
        console.move(start)
    except CommandError as e:
        print(f"kraftlog: {e}", file=sys.stderr)
        return 1
    if args.commands is not None:
        console.run_line(args.commands)
    elif not sys.stdin.isatty():
        for line in sys.stdin:
            if not console.run_line(line):
                break
    else:
        _interactive(console)
        return 0  # at a terminal each error was shown where it happened
    return console.status


def _point_text(point) -> str:
    """``at``'s argument for a cursor point."""
    if point.offset is not None:
        return str(point.offset)
    return "end" if point.time_ms is None else f"t:{point.time_ms}"
