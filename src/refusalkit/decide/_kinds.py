"""Kinds: a field class may say what its values are, and the engine parses them first.

A class with ``kind: path``, ``url`` or ``shell`` (docs/policy.md, Kinds) has its values parsed
into a normal form before any condition sees them, so that two spellings of one thing are
decided alike. A value the parser cannot read is *unknown* (``MISSING``): it fails closed under
deny and block rules and never satisfies an allow.

- ``path``: POSIX lexical normalisation (collapses ``//`` and ``/./``, resolves ``..``); escaping
  the root, a NUL or a control character is unknown. Options ``case_fold`` (lower case) and
  ``windows`` (``\\`` is a separator too).
- ``url``: RFC 3986 characters only, split by ``urllib.parse``; the record has ``scheme``,
  ``host`` (lower case; an IPv4 host in any notation an address parser accepts, such as
  ``0x7f.1`` or ``2130706433``, becomes its dotted quad; IPv6 its RFC 5952 form), ``port``
  (explicit or the scheme's default) and ``path`` (dot segments removed, RFC 3986 §5.2.4).
- ``shell``: POSIX word splitting into ``argv``; any expansion or operator (``$``, backtick,
  ``|``, ``&``, ``;``, ``<``, ``>``, parentheses, globs, ``~``, comments, newlines) or unbalanced
  quoting is unknown, because the words a shell would run can then not be known from the text.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
import shlex
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any
from urllib.parse import urlsplit

from refusalkit.decide._fields import MISSING

__all__ = [
    "COMPONENTS",
    "Kind",
    "kind_parser",
    "lexical_path_options",
    "parse_path",
    "parse_shell",
    "parse_url",
    "path_forms",
]


class Kind(Enum):
    """The kinds a field class may declare (stable strings, as written in packs)."""

    PATH = "path"
    URL = "url"
    SHELL = "shell"


# The parts of a parsed value a field path may name after the field (``args.url.host``).
COMPONENTS: Mapping[Kind, frozenset[str]] = {
    Kind.PATH: frozenset(),
    Kind.URL: frozenset({"scheme", "host", "port", "path", "query"}),
    Kind.SHELL: frozenset({"argv"}),
}

_CACHE = 4096


# -- path ---------------------------------------------------------------------------------------


def _normal_posix(text: str, *, lenient: bool = False) -> str | None:
    """Lexically normal form of a POSIX path, or None when it escapes its root.

    ``lenient`` (the strings ``args.**`` reaches): a path that climbs above where it starts is
    still read, as the operating system reads it: ``/..`` is ``/``, and a relative path keeps
    its leading ``..`` segments (``../.env`` stays ``../.env``, so a name rule still sees it).
    """
    absolute = text.startswith("/")
    out: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not out or out[-1] == "..":
                if not lenient:
                    return None  # above the root (or above where a relative path starts)
                if not absolute:
                    out.append("..")
                continue
            out.pop()
        else:
            out.append(part)
    body = "/".join(out)
    if absolute:
        return "/" + body
    return body or "."


def _is_normal(text: str) -> bool:
    """Whether a path has no empty, ``.`` or ``..`` segment and no trailing ``/`` (C string
    tests only: most paths are already normal, and take no split)."""
    return not (
        "//" in text
        or "/./" in text
        or "/../" in text
        or text.endswith(("/", "/.", "/.."))
        or text.startswith(("./", "../"))
        or text in (".", "..")
    )


def _path(text: str, *, case_fold: bool, windows: bool, lenient: bool = False) -> str | None:
    if not text or not text.isprintable():
        return None  # empty, NUL, control and other unprintable characters
    if windows:
        text = text.replace("\\", "/")
    if case_fold:
        text = text.lower()
    return text if _is_normal(text) else _normal_posix(text, lenient=lenient)


def parse_path(
    value: Any, *, case_fold: bool = False, windows: bool = False, lenient: bool = False
) -> Any:
    """The normal form of a path string, or ``MISSING`` (unknown)."""
    if type(value) is not str:
        return MISSING
    out = _path(value, case_fold=case_fold, windows=windows, lenient=lenient)
    return MISSING if out is None else out


def path_forms(
    value: Any, *, case_fold: bool = False, windows: bool = False, lenient: bool = False
) -> Any:
    """``resolve: true``: the lexical normal form and the form the host resolves (``realpath``:
    symbolic links followed), as a list of one or two; ``MISSING`` when either is unknown.

    Only meaningful where the decision runs on the host of the tool (``mcp wrap`` of a local
    server, the local enforcer), and only for links that exist when the decision is made.
    """
    lexical = parse_path(value, case_fold=case_fold, windows=windows, lenient=lenient)
    if lexical is MISSING:
        return MISSING
    text = value.replace("\\", "/") if windows else value
    try:
        real = os.path.realpath(text)
    except (OSError, ValueError):
        return MISSING
    real = parse_path(real, case_fold=case_fold, lenient=True)
    if real is MISSING:
        return MISSING
    return [lexical] if real == lexical else [lexical, real]


def _parse_posix_path(value: Any) -> Any:
    """``parse_path`` without options: the common case, in one call."""
    if type(value) is not str:
        return MISSING
    if value and value.isprintable() and _is_normal(value):
        return value
    out = _path(value, case_fold=False, windows=False)
    return MISSING if out is None else out


# -- url ----------------------------------------------------------------------------------------

_URL_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_REG_NAME = re.compile(r"[a-z0-9\-._~]+")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_IPV4_PART = re.compile(r"0[xX][0-9A-Fa-f]*|0[0-7]*|[1-9][0-9]*")


def _ipv4_number(part: str) -> int:
    if part[:2] in ("0x", "0X"):
        return int(part[2:] or "0", 16)
    return int(part, 8) if len(part) > 1 and part[0] == "0" else int(part)


def _ipv4_any(host: str) -> str | None:
    """An IPv4 address in any notation ``inet_aton`` reads (1 to 4 parts, each decimal, octal
    ``0..`` or hex ``0x..``), as its dotted quad; None when ``host`` is not one."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        return None
    numbers = [_ipv4_number(p) for p in parts]
    last = numbers.pop()
    if any(n > 255 for n in numbers) or last >= 1 << (8 * (4 - len(numbers))):
        return None
    value = last
    for index, octet in enumerate(numbers):
        value |= octet << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


def _ipv6(raw: str) -> str | None:
    """A bracketed IPv6 literal in RFC 5952 form; zone ids and IPvFuture are refused."""
    if not raw.endswith("]") or "%" in raw:
        return None
    try:
        return str(ipaddress.IPv6Address(raw[1:-1]))
    except ValueError:
        return None


def _host(raw: str) -> str | None:
    """The host as rules see it: a dotted quad, an RFC 5952 IPv6 address, or a lower-case name."""
    if raw.startswith("["):
        return _ipv6(raw)
    host = raw.lower()
    if "%" in host or not host:
        return None  # a percent-encoded host is read differently by different clients
    if host.endswith("."):
        host = host[:-1]  # the root label: example.com. is example.com
    ipv4 = _ipv4_any(host)
    if ipv4 is not None:
        return ipv4
    if not _REG_NAME.fullmatch(host) or host.split(".")[-1].isdigit():
        return None  # a name ending in a number is neither an address nor a host name
    return host


def _unescape_unreserved(text: str) -> str:
    """Decode percent-escapes of unreserved characters; upper-case the others (RFC 3986 §6.2.2)."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else match.group(0).upper()

    return _PCT.sub(fix, text)


def _remove_dots(path: str) -> str:
    """RFC 3986 §5.2.4 remove_dot_segments, for an absolute path."""
    out: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        elif segment == ".":
            if last:
                out.append("")
        else:
            out.append(segment)
    joined = "/".join(out)
    return joined if joined.startswith("/") else "/" + joined


@functools.lru_cache(maxsize=_CACHE)
def _url(text: str) -> tuple[str, str, int, str, str] | None:
    if not _URL_CHARS.fullmatch(text):
        return None  # spaces, backslashes, controls, non-ASCII: clients disagree on them
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not _SCHEME.fullmatch(scheme) or not parts.netloc or "@" in parts.netloc:
        return None  # no authority, or userinfo (user@host): refused rather than guessed
    bracketed = parts.netloc.rsplit(":", 1)[0] if port is not None else parts.netloc
    host = _host(bracketed)
    if host is None:
        return None
    port = port if port is not None else _DEFAULT_PORTS.get(scheme, 0)
    path = _remove_dots(_unescape_unreserved(parts.path or "/"))
    return scheme, host, port, path, _unescape_unreserved(parts.query)


def _url_text(scheme: str, host: str, port: int, path: str, query: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    default = _DEFAULT_PORTS.get(scheme)
    authority = shown if port == default else f"{shown}:{port}"
    return f"{scheme}://{authority}{path}" + (f"?{query}" if query else "")


def parse_url(value: Any, *, record: bool = True) -> Any:
    """The URL as a record (``scheme``, ``host``, ``port``, ``path``, ``query``), or its normal
    text when ``record`` is false; ``MISSING`` (unknown) when it does not parse strictly."""
    if type(value) is not str:
        return MISSING
    parsed = _url(value)
    if parsed is None:
        return MISSING
    if not record:
        return _url_text(*parsed)
    scheme, host, port, path, query = parsed
    return {"scheme": scheme, "host": host, "port": port, "path": path, "query": query}


# -- shell --------------------------------------------------------------------------------------

_OPERATORS = frozenset("|&;<>()$`*?[]{}!\n\r")
_WORD_START = frozenset("~#")
_DOUBLE_SPECIAL = frozenset('$`"\\\n')


def _double(text: str, index: int, word: list[str]) -> int | None:
    """Read a double-quoted string from just after its quote; the index after it, or None."""
    size = len(text)
    while index < size:
        char = text[index]
        if char == '"':
            return index + 1
        if char in "$`\n":
            return None  # expansions still happen inside double quotes
        escaped = char == "\\" and index + 1 < size and text[index + 1] in _DOUBLE_SPECIAL
        word.append(text[index + 1] if escaped else char)
        index += 2 if escaped else 1
    return None  # unbalanced


def _quoted(text: str, index: int, word: list[str]) -> int | None:
    """Read one escape or quoted string starting at ``index``; the index after it, or None."""
    char = text[index]
    if char == "\\":
        if index + 1 >= len(text) or text[index + 1] in "\n\r":
            return None
        word.append(text[index + 1])
        return index + 2
    if char == "'":
        end = text.find("'", index + 1)
        if end == -1:
            return None
        word.append(text[index + 1 : end])
        return end + 1
    return _double(text, index + 1, word)


def _split(text: str) -> list[str] | None:
    """POSIX words of a simple command with no expansion or operator; None otherwise."""
    words: list[str] = []
    word: list[str] | None = None
    index: int | None = 0
    while index is not None and index < len(text):
        char = text[index]
        if char in " \t":
            if word is not None:
                words.append("".join(word))
            word, index = None, index + 1
            continue
        if (word is None and char in _WORD_START) or char in _OPERATORS:
            return None
        word = [] if word is None else word
        if char in "\\'\"":
            index = _quoted(text, index, word)
        else:
            word.append(char)
            index += 1
    if index is None:
        return None
    if word is not None:
        words.append("".join(word))
    return words


@functools.lru_cache(maxsize=_CACHE)
def _argv(text: str) -> tuple[str, ...] | None:
    if "\x00" in text or any(ord(c) < 0x20 and c not in "\t" for c in text):
        return None
    words = _split(text)
    if not words or "=" in words[0]:
        return None  # nothing to run, or an assignment prefix (X=1 rm ...) hides the command
    return tuple(words)


def parse_shell(value: Any, *, record: bool = True) -> Any:
    """``{"argv": [...]}`` (or, when ``record`` is false, the argv re-quoted as one string);
    ``MISSING`` (unknown) for anything but a simple command."""
    if type(value) is not str:
        return MISSING
    argv = _argv(value)
    if argv is None:
        return MISSING
    return {"argv": list(argv)} if record else shlex.join(argv)


# -- choosing a parser --------------------------------------------------------------------------


def lexical_path_options(parse: Callable[[Any], Any]) -> Mapping[str, Any] | None:
    """The options of ``parse`` when it is a lexical path parse from ``kind_parser`` (the
    normal form keeps the segments as written, case folded if asked), else None."""
    if parse is _parse_posix_path:
        return {}
    if isinstance(parse, functools.partial) and parse.func is parse_path and not parse.args:
        return parse.keywords
    return None


def reads_the_host(parse: Callable[[Any], Any]) -> bool:
    """Whether ``parse`` is a path parse from ``kind_parser`` that resolves on the host
    (``resolve: true``): its answer for one string may change between two decisions."""
    return isinstance(parse, functools.partial) and parse.func is path_forms


@functools.cache
def kind_parser(
    kind: Kind,
    *,
    record: bool,
    case_fold: bool = False,
    windows: bool = False,
    lenient: bool = False,
    resolve: bool = False,
) -> Callable[[Any], Any]:
    """The parse function of a kind (one object per options, so conditions can share it)."""
    if kind is Kind.PATH and resolve:
        return functools.partial(path_forms, case_fold=case_fold, windows=windows, lenient=lenient)
    if kind is Kind.PATH:
        if not case_fold and not windows and not lenient:
            return _parse_posix_path
        return functools.partial(parse_path, case_fold=case_fold, windows=windows, lenient=lenient)
    if kind is Kind.URL:
        return functools.partial(parse_url, record=record)
    return functools.partial(parse_shell, record=record)
