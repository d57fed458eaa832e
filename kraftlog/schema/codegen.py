"""Generate straight-line decoders and encoders from the schema declarations.

Interpreting a schema table once per record is too slow for logs of millions of records, so, as
Kafka generates its message classes from JSON specs, each (struct, version) gets a Python
function written out as source text, ``exec``-ed once and cached. Consecutive fixed-width fields
share one ``struct`` unpack. The hot path carries no bookkeeping for error reporting: when a read
fails, ``locate`` maps the failing line of the generated code back to the field, and reads the
position from the frame.

Decoder: ``fn(buf, pos, unk[, path]) -> (data, pos)``; unknown tags are appended to ``unk`` as
``(path, tag, raw)``. Encoder: ``fn(data, out, unk, path)`` appends to the bytearray ``out``;
``unk`` maps a path to ``[(tag, raw), ...]`` to write back.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import linecache
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from kraftlog.schema.fields import BYTES, UUID, Array, Compact, Field, FieldType, Fixed, Message, Struct
from kraftlog.wire.errors import CorruptRecordError
from kraftlog.wire.varint import read_uvarint, write_uvarint

MAX_STRING_LENGTH = 0x7FFF  # Kafka rejects longer strings on read


class SchemaError(CorruptRecordError):
    """A record body that does not follow its schema; the message names field and byte."""


#: What a generated decoder can raise on malformed input (anything else is a bug).
DECODE_ERRORS = (IndexError, struct.error, UnicodeDecodeError, CorruptRecordError)
#: What a generated encoder raises on data that does not fit the schema.
ENCODE_ERRORS = (struct.error, TypeError, AttributeError, ValueError, binascii.Error, SchemaError)

_URLSAFE = bytes.maketrans(b"+/", b"-_")
_uuid_texts: dict[bytes, str] = {}


def uuid_text(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``; topic ids repeat, so texts are cached (bounded)."""
    text = _uuid_texts.get(raw)
    if text is None:
        if len(_uuid_texts) >= 1 << 16:
            _uuid_texts.clear()
        text = _uuid_texts[raw] = binascii.b2a_base64(raw, newline=False)[:22].translate(_URLSAFE).decode()
    return text


def uuid_raw(text: str) -> bytes:
    """The 16 bytes of a uuid text; strict, since ``struct`` would silently pad a short result."""
    raw = base64.urlsafe_b64decode(text + "==") if len(text) == 22 else b""
    if len(raw) != 16 or uuid_text(raw) != text:
        raise ValueError(f"not a uuid text (22 characters of base64url): {text!r}")
    return raw


class _PackedArrays(dict):
    """``unpack_from`` of ``n`` packed values of one code, by ``n``: a dict hit for common counts."""

    def __init__(self, code: str) -> None:
        super().__init__((n, struct.Struct(f">{n}{code}").unpack_from) for n in range(64))
        self.code = code

    def __missing__(self, n: int) -> Callable:
        return struct.Struct(f">{n}{self.code}").unpack_from  # not kept: counts come from the data


@functools.cache
def _packed_arrays(code: str) -> _PackedArrays:
    return _PackedArrays(code)


def _write_uvarint(out: bytearray, n: int) -> None:
    if n < 0x80:
        out.append(n)
    else:
        out += write_uvarint(n)


def _write_tags(out: bytearray, tags: list) -> None:
    tags.sort(key=lambda t: t[0])
    _write_uvarint(out, len(tags))
    for tag, raw in tags:
        _write_uvarint(out, tag)
        _write_uvarint(out, len(raw))
        out += raw


_HELPERS: dict[str, Any] = {
    "_uvarint": read_uvarint,
    "_w_uvarint": _write_uvarint,
    "_w_tags": _write_tags,
    "_uuid": uuid_text,
    "_uuid_seen": _uuid_texts.get,  # the text of a uuid read before, without a call into ``uuid_text``
    "_uuid_raw": uuid_raw,
    "_Malformed": SchemaError,
    "_MAXSTR": MAX_STRING_LENGTH,
    "_pack": struct.pack,
}


@dataclass(frozen=True, slots=True)
class Location:
    """What a line of generated code reads: a field, or a run of fixed fields ``(name, offset, size)``."""

    field: str
    run: tuple[tuple[str, int, int], ...] = ()


#: code object of each generated function -> {line number: Location}
_locations: dict[Any, dict[int, Location]] = {}


class _Source:
    """Source text under construction, remembering which field each line handles."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.where: dict[int, Location] = {}
        self.depth = 1
        self.loc = Location("")
        self.names = 0

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)
        self.where[len(self.lines) + 1] = self.loc  # +1: the def line comes first

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    @contextlib.contextmanager
    def indent(self, when: bool = True) -> Iterator[None]:
        self.depth += when
        yield
        self.depth -= when


def _var(f: Field) -> str:
    return "f_" + f.json


def _differs(f: Field, var: str) -> str:
    """Python test for "differs from the default": tagged fields are written (and shown) only then."""
    default = f.default_value()
    if default is None:
        return f"{var} is not None"
    if default == []:
        return f"{var}"
    return f"{var} != {default!r}"


def _runs(fields: list[Field]) -> list[list[Field] | Field]:
    """Group consecutive fixed-width untagged fields, so each group is one ``unpack_from``."""
    out: list[list[Field] | Field] = []
    for f in fields:
        if isinstance(f.type, Fixed):
            if out and isinstance(out[-1], list):
                out[-1].append(f)
            else:
                out.append([f])
        else:
            out.append(f)
    return out


def _struct_fn(src: _Source, ns: dict, codes: str, pack: bool = False) -> str:
    """Bind a ``struct`` unpack (decoders) or pack (encoders) of ``codes`` to a fresh name."""
    name = src.fresh("_s")
    st = struct.Struct(">" + codes)
    ns[name] = st.pack if pack else st.unpack_from
    return name


def _sub_path(top: bool, name: str, index: str | None) -> str:
    suffix = f"{name}[{{{index}}}]" if index else name
    return f'f"{suffix}"' if top else f'f"{{path}}.{suffix}"'


# ---------------------------------------------------------------------------------------- decoders


def _read_length(src: _Source, var: str, f: Field, version: int) -> None:
    """Read a compact ``N+1`` prefix into ``var`` as N (-1 for null, refused unless nullable)."""
    src.emit(f"{var} = buf[pos] - 1; pos += 1")
    src.emit(f"if {var} >= 127: {var}, pos = _uvarint(buf, pos - 1); {var} -= 1")
    if not f.nullable_in(version):
        src.emit(f"if {var} < 0: raise _Malformed('non-nullable field was serialized as null')")


def _unless_null(src: _Source, n: str, var: str, nullable: bool) -> contextlib.AbstractContextManager:
    """``if n < 0: var = None / else:`` around a value's body, when the field may be null."""
    if nullable:
        src.emit(f"if {n} < 0: {var} = None")
        src.emit("else:")
    return src.indent(nullable)


def _read_value(src: _Source, ns: dict, t: FieldType, var: str, f: Field, version: int, top: bool,
                index: str | None = None) -> None:
    """Emit code reading one value of type ``t`` into ``var``; ``f`` gives nullability and name."""
    if isinstance(t, Fixed):
        fn = _struct_fn(src, ns, t.code)
        src.emit(f"{var}, = {fn}(buf, pos); pos += {t.size}")
        if t is UUID:
            src.emit(f"{var} = _uuid_seen({var}) or _uuid({var})")
    elif isinstance(t, Struct):
        ns[f"_d_{t.name}"] = decoder(t, version)
        src.emit(f"{var}, pos = _d_{t.name}(buf, pos, unk, {_sub_path(top, f.json, index)})")
    elif isinstance(t, Compact):
        n = src.fresh("n")
        _read_length(src, n, f, version)
        with _unless_null(src, n, var, f.nullable_in(version)):
            src.emit(f"if {n} > end - pos: raise _Malformed(f'length {{{n}}} exceeds the {{end - pos}} bytes left')")
            if t is BYTES:
                src.emit(f"{var} = buf[pos:pos + {n}]; pos += {n}")
            else:
                src.emit(f"if {n} > _MAXSTR: raise _Malformed(f'string length {{{n}}} is over {{_MAXSTR}}')")
                src.emit(f"{var} = str(buf[pos:pos + {n}], 'utf-8'); pos += {n}")
    elif isinstance(t, Array):
        n = src.fresh("n")
        _read_length(src, n, f, version)
        with _unless_null(src, n, var, f.nullable_in(version)):
            e = t.element
            src.emit(f"if {n} * {e.min_size} > end - pos: raise _Malformed("
                     f"f'array of {{{n}}} needs at least {{{n} * {e.min_size}}} bytes, {{end - pos}} left')")
            if e is UUID:
                src.emit(f"{var} = [_uuid(buf[i:i + 16]) for i in range(pos, pos + 16 * {n}, 16)]; pos += 16 * {n}")
            elif isinstance(e, Fixed):
                ns[f"_arr_{e.code}"] = _packed_arrays(e.code)
                src.emit(f"{var} = list(_arr_{e.code}[{n}](buf, pos)); pos += {e.size} * {n}")
            else:
                i, item = src.fresh("i"), src.fresh("e")
                src.emit(f"{var} = []")
                src.emit(f"for {i} in range({n}):")
                with src.indent():
                    element = Field(f.name, e, f.versions)  # elements are never null
                    _read_value(src, ns, e, item, element, version, top, i)
                    src.emit(f"{var}.append({item})")
    else:
        raise TypeError(t)


def _read_tags(src: _Source, ns: dict, s: Struct, version: int, top: bool) -> None:
    """The tag section: known tags into their variables, unknown ones kept raw in ``unk``."""
    present = {f.tag: f for f in s.fields_at(version) if f.tag is not None}
    absent = sorted(f.tag for f in s.fields if f.tag is not None and f.tag not in present)
    src.loc = Location("(tagged fields)")
    src.emit("n = buf[pos]; pos += 1")
    src.emit("if n > 127: n, pos = _uvarint(buf, pos - 1)")
    src.emit("if n:")
    with src.indent():
        src.emit("if 2 * n > end - pos: raise _Malformed(f'{n} tagged fields need at least {2 * n} bytes, "
                 "{end - pos} left')")
        src.emit("for _ in range(n):")
        with src.indent():
            src.emit("tag = buf[pos]; pos += 1")
            src.emit("if tag > 127: tag, pos = _uvarint(buf, pos - 1)")
            src.emit("size = buf[pos]; pos += 1")
            src.emit("if size > 127: size, pos = _uvarint(buf, pos - 1)")
            src.emit("if size > end - pos: raise _Malformed(f'tag {tag} has size {size}, {end - pos} bytes left')")
            src.emit("tag_end = pos + size")
            for tag, f in sorted(present.items()):
                src.emit(f"if tag == {tag}:")
                with src.indent():
                    src.loc = Location(f.json)
                    _read_value(src, ns, f.type, _var(f), f, version, top)
                    src.emit(f"if pos != tag_end: raise _Malformed(f'tag {tag} declares {{size}} bytes, "
                             f"its value took {{pos - tag_end + size}}')")
                    src.emit("continue")
                    src.loc = Location("(tagged fields)")
            for tag in absent:
                src.emit(f"if tag == {tag}: raise _Malformed('Tag {tag} is not valid for version {version}')")
            where = "''" if top else "path"
            src.emit(f"unk.append(({where}, tag, buf[pos:tag_end])); pos = tag_end")


def _build_dict(src: _Source, fields: list[Field]) -> None:
    """``d`` in schema order; a tagged field only when it differs from its default."""
    src.loc = Location("")
    k = next((k for k, f in enumerate(fields) if f.tag is not None), len(fields))
    src.emit(f"d = {{{', '.join(f'{f.json!r}: {_var(f)}' for f in fields[:k])}}}")
    for f in fields[k:]:
        if f.tag is None:
            src.emit(f'd["{f.json}"] = {_var(f)}')
        else:
            src.emit(f'if {_differs(f, _var(f))}: d["{f.json}"] = {_var(f)}')


def _read_untagged(src: _Source, ns: dict, fields: list[Field], version: int, top: bool) -> None:
    """The untagged fields, in schema order, into their variables."""
    for item in _runs([f for f in fields if f.tag is None]):
        if isinstance(item, list):
            offsets, size = [], 0
            for f in item:
                offsets.append((f.json, size, f.type.size))
                size += f.type.size
            src.loc = Location(item[0].json, tuple(offsets))
            fn = _struct_fn(src, ns, "".join(f.type.code for f in item))
            src.emit(f"{', '.join(_var(f) for f in item)}, = {fn}(buf, pos); pos += {size}")
            for f in item:
                if f.type is UUID:
                    src.emit(f"{_var(f)} = _uuid_seen({_var(f)}) or _uuid({_var(f)})")
        else:
            src.loc = Location(item.json)
            _read_value(src, ns, item.type, _var(item), item, version, top)
    src.loc = Location("")


def _build_decoder(s: Struct, version: int) -> Callable:
    top = isinstance(s, Message)
    src = _Source()
    ns = dict(_HELPERS)
    fields = s.fields_at(version)
    src.emit("end = len(buf)")
    _read_untagged(src, ns, fields, version, top)
    for f in fields:
        if f.tag is not None:
            src.emit(f"{_var(f)} = {f.default_value()!r}")
    _read_tags(src, ns, s, version, top)
    _build_dict(src, fields)
    src.emit("return d, pos")
    return _compile(src, ns, f"decode_{s.name}_v{version}", "buf, pos, unk" if top else "buf, pos, unk, path")


def _build_whole(s: Message, version: int) -> Callable | None:
    """A record's decoder for values as writers write them: each known tag at most once, in ascending
    order, one-byte tag and size, each value exactly filling its size, no unknown tags, nothing after
    the body. The tag section is read without a loop and, where the schema's dict order is wire order
    (untagged fields first, tagged ones by ascending tag), tagged fields go straight into the result
    (no defaults to set); the fields' own reads are the general decoder's code. ``fn(buf, pos) ->
    data``, or None for anything else (a read that fails or overruns, tags out of order, repeated or
    unknown, bytes left over): the caller then reads the value with the general decoder, which gives
    its result or its error. None (no such decoder) for tags above 127."""
    fields = s.fields_at(version)
    tagged = sorted((f for f in fields if f.tag is not None), key=lambda f: f.tag)
    if any(f.tag > 127 for f in tagged):
        return None
    first = next((k for k, f in enumerate(fields) if f.tag is not None), len(fields))
    in_order = fields[first:] == tagged
    src = _Source()
    ns = dict(_HELPERS)
    ns["_ERRORS"] = DECODE_ERRORS
    # a struct's decoder keeps its unknown tags in ``unk`` as it goes: a value with some is not whole
    nested = any(isinstance(f.type, Struct) or isinstance(f.type, Array) and isinstance(f.type.element, Struct)
                 for f in fields)
    whole = "pos == end and not unk" if nested else "pos == end"
    src.emit("try:")
    with src.indent():
        src.emit("end = len(buf)" + ("; unk = []" if nested else ""))
        _read_untagged(src, ns, fields, version, True)
        if in_order:
            src.emit(f"d = {{{', '.join(f'{f.json!r}: {_var(f)}' for f in fields[:first])}}}")
        else:
            for f in tagged:
                src.emit(f"{_var(f)} = {f.default_value()!r}")
        src.emit("n = buf[pos]; pos += 1")
        if in_order:
            src.emit(f"if not n: return d if {whole} else None")
        src.emit("if n > 127: return None")
        for f in tagged:
            t = f.type
            fixed = isinstance(t, Fixed) and t is not UUID  # a size that is not its width: not read here
            src.emit(f"if {'' if in_order else 'n and '}buf[pos] == {f.tag} and buf[pos + 1] "
                     f"{f'== {t.size}' if fixed else '< 128'}:")
            with src.indent():
                if fixed:
                    fn = _struct_fn(src, ns, t.code)
                    src.emit(f"{_var(f)}, = {fn}(buf, pos + 2); pos += {2 + t.size}")
                elif isinstance(t, Array) and isinstance(t.element, Fixed) and t.element is not UUID:
                    # a count that fills the size exactly (both one-byte varints), the elements unpacked
                    # at once (a short buffer is struct.error): the general read, less what the size says
                    e = t.element
                    ns[f"_arr_{e.code}"] = _packed_arrays(e.code)
                    src.emit("size = buf[pos + 1]; count = buf[pos + 2] - 1")
                    src.emit(f"if size == 1 + {e.size} * count and count >= 0:")
                    with src.indent():
                        src.emit(f"{_var(f)} = list(_arr_{e.code}[count](buf, pos + 3)); pos += 2 + size")
                    if f.nullable_in(version):
                        src.emit(f"elif size == 1 and count == -1: {_var(f)} = None; pos += 3")
                    src.emit("else: return None")
                else:
                    src.emit("tag_end = pos + 2 + buf[pos + 1]; pos += 2")
                    src.emit("if tag_end > end: return None")
                    _read_value(src, ns, t, _var(f), f, version, True)
                    src.emit("if pos != tag_end: return None")
                src.emit("n -= 1")
                if in_order:
                    src.emit(f'if {_differs(f, _var(f))}: d["{f.json}"] = {_var(f)}')
                    src.emit(f"if not n: return d if {whole} else None")
        if not in_order:
            src.emit(f"if n or not {whole}: return None" if tagged else f"if not {whole}: return None")
            _build_dict(src, fields)
            src.emit("return d")
    src.emit("except _ERRORS:")
    with src.indent():
        src.emit("pass")
    src.emit("return None")
    return _compile(src, ns, f"decode_{s.name}_v{version}_whole", "buf, pos", located=False)


# ---------------------------------------------------------------------------------------- encoders


def _write_value(src: _Source, ns: dict, t: FieldType, var: str, f: Field, version: int, out: str) -> None:
    if isinstance(t, Fixed):
        fn = _struct_fn(src, ns, t.code, pack=True)
        src.emit(f"{out} += {fn}(_uuid_raw({var}))" if t is UUID else f"{out} += {fn}({var})")
        return
    if isinstance(t, Struct):
        ns[f"_e_{t.name}"] = encoder(t, version)
        src.emit(f"_e_{t.name}({var}, {out}, unk, f'{{path}}.{f.json}' if path else '{f.json}')")
        return
    src.emit(f"if {var} is None:")
    with src.indent():
        src.emit(f"{out}.append(0)" if f.nullable_in(version) else
                 "raise _Malformed('null is not allowed in this version')")
    src.emit("else:")
    with src.indent():
        if isinstance(t, Compact):
            b = src.fresh("b")
            if t is BYTES:
                src.emit(f"{b} = bytes({var})")
            else:
                src.emit(f"{b} = {var}.encode()")
                src.emit(f"if len({b}) > _MAXSTR: raise _Malformed(f'string of {{len({b})}} bytes is over {{_MAXSTR}}')")
            src.emit(f"_w_uvarint({out}, len({b}) + 1); {out} += {b}")
        elif isinstance(t, Array):
            e = t.element
            src.emit(f"_w_uvarint({out}, len({var}) + 1)")
            if isinstance(e, Fixed) and e is not UUID:
                src.emit(f"{out} += _pack(f'>{{len({var})}}{e.code}', *{var})")
            else:
                i, item = src.fresh("i"), src.fresh("e")
                src.emit(f"for {i}, {item} in enumerate({var}):")
                with src.indent():
                    if isinstance(e, Struct):
                        ns[f"_e_{e.name}"] = encoder(e, version)
                        src.emit(f"_e_{e.name}({item}, {out}, unk, "
                                 f"f'{{path}}.{f.json}[{{{i}}}]' if path else f'{f.json}[{{{i}}}]')")
                    else:
                        _write_value(src, ns, e, item, Field(f.name, e, f.versions), version, out)
        else:
            raise TypeError(t)


def _build_encoder(s: Struct, version: int) -> Callable:
    src = _Source()
    ns = dict(_HELPERS)
    fields = s.fields_at(version)
    ns["_NAMES"] = frozenset(f.json for f in fields)
    src.emit("if not _NAMES.issuperset(d): "
             "raise _Malformed(f'no such field in this version: {sorted(set(d) - _NAMES)}')")
    for f in fields:
        if f.tag is None:
            src.loc = Location(f.json)
            src.emit(f"v = d.get({f.json!r}, {f.default_value()!r})")
            _write_value(src, ns, f.type, "v", f, version, "out")
    src.loc = Location("(tagged fields)")
    src.emit("tags = list(unk.get(path, ())) if unk else []")
    for f in sorted((f for f in fields if f.tag is not None), key=lambda f: f.tag):
        src.loc = Location(f.json)
        src.emit(f"v = d.get({f.json!r}, {f.default_value()!r})")
        src.emit(f"if {_differs(f, 'v')}:")
        with src.indent():
            src.emit("t = bytearray()")
            _write_value(src, ns, f.type, "v", f, version, "t")
            src.emit(f"tags.append(({f.tag}, t))")
    src.loc = Location("(tagged fields)")
    src.emit("if tags: _w_tags(out, tags)")
    src.emit("else: out.append(0)")
    return _compile(src, ns, f"encode_{s.name}_v{version}", "d, out, unk, path")


# ---------------------------------------------------------------------------------------- plumbing


def _compile(src: _Source, ns: dict, name: str, params: str, located: bool = True) -> Callable:
    text = f"def {name}({params}):\n" + "\n".join(src.lines) + "\n"
    filename = f"<kraftlog generated {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), ns)
    fn = ns[name]
    if located:  # a fast path is not: its failures are its general decoder's to name
        _locations[fn.__code__] = src.where
    return fn


_decoders: dict[tuple[Struct, int], Callable] = {}
_encoders: dict[tuple[Struct, int], Callable] = {}


def decoder(s: Struct, version: int) -> Callable:
    """The generated decoder of ``s`` at ``version`` (built on first use, then cached)."""
    fn = _decoders.get((s, version))
    if fn is None:
        fn = _decoders[(s, version)] = _build_decoder(s, version)
    return fn


_wholes: dict[tuple[Message, int], Callable | None] = {}


def whole_decoder(s: Message, version: int) -> Callable | None:
    """The generated whole-value decoder of record ``s`` at ``version`` (``_build_whole``), None if it has none."""
    key = (s, version)
    if key not in _wholes:
        _wholes[key] = _build_whole(s, version)
    return _wholes[key]


def encoder(s: Struct, version: int) -> Callable:
    """The generated encoder of ``s`` at ``version`` (built on first use, then cached)."""
    fn = _encoders.get((s, version))
    if fn is None:
        fn = _encoders[(s, version)] = _build_encoder(s, version)
    return fn


def source_of(fn: Callable) -> str:
    """The generated text, for reviewers and for debugging."""
    return "".join(linecache.getlines(fn.__code__.co_filename))


def locate(exc: BaseException) -> str:
    """Say which field, at which byte, a generated decoder or encoder failed on.

    The byte is where reading stopped: the start of a truncated fixed-width field, or the first
    byte after a length or count that does not fit.
    """
    tb: TracebackType | None = exc.__traceback__
    frame = lineno = None
    while tb is not None:
        if tb.tb_frame.f_code in _locations:
            frame, lineno = tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next
    reason = _reason(exc)
    if frame is None:
        return reason
    where = _locations[frame.f_code].get(lineno, Location(""))
    local = frame.f_locals
    path = local.get("path") or ""
    if "buf" not in local:  # an encoder
        name = ".".join(p for p in (path, where.field) if p)
        return f"field '{name}': {reason}" if name else reason
    pos = local.get("pos", 0)
    field = where.field
    name = ".".join(p for p in (path, field) if p)
    if isinstance(exc, CorruptRecordError) and not isinstance(exc, SchemaError):
        return f"field '{name}': {reason}"  # a varint reader's message, which names its own byte
    if where.run and isinstance(exc, struct.error):
        left = len(local["buf"]) - pos
        for name, offset, size in where.run:
            if offset + size > left:
                field, pos = name, pos + offset
                reason = f"needs {size} bytes, {max(left - offset, 0)} left"
                break
    elif isinstance(exc, IndexError):
        reason = "value runs past the end of the data"
    name = ".".join(p for p in (path, field) if p)
    return f"field '{name}' at byte {pos}: {reason}" if name else f"at byte {pos}: {reason}"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid UTF-8 ({exc.reason} at string byte {exc.start})"
    return str(exc)
