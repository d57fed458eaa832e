"""Text from a log made safe to show: a log's topic names, config values and file names can hold any
character, and what is printed must neither drive a terminal nor forge lines."""

import re

#: What a terminal may act on rather than show: C0 controls (ESC starts its sequences; CR and BS
#: overwrite what was printed), DEL, C1 controls (CSI, OSC) and the bidirectional overrides that
#: reorder what is shown. A log's topic names, config values and file names can hold any of them.
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_UNSAFE_IN_LINES = re.compile(f"[{_CONTROL}]")
_UNSAFE = re.compile(f"[{_CONTROL}\t\n]")


def _escape(m: re.Match) -> str:
    return f"\\u{ord(m[0]):04X}"  # Jackson's form: the same text in a JSON string and to the eye


def printable(text: str, lines: bool = False) -> str:
    """``text`` with every control character escaped as ``\\uXXXX``; with ``lines`` newlines and tabs
    are kept (a whole output, whose line breaks are its own). A one-line field (a path) takes the
    default, so a newline in a file name cannot forge a line."""
    # every character the patterns match is unprintable (str.isprintable): most text is checked in C
    if (text.replace("\n", "").replace("\t", "") if lines else text).isprintable():
        return text
    pattern = _UNSAFE_IN_LINES if lines else _UNSAFE
    return pattern.sub(_escape, text) if pattern.search(text) else text
