"""KEY=VALUE configuration files (platforms/*.env, experiments/*/config.env). Pure: reads one file, runs nothing.

The files are data, never shell code: nothing in them is executed. A line is
blank, a comment, or ``[export ]KEY=VALUE`` where VALUE is

* ``"double quoted"``: references expanded; a backslash makes the next
  character literal when it is one of " \\ $ ` (other backslashes stay);
* ``'single quoted'``: taken literally;
* bare: no blanks or quotes inside; references expanded.

A trailing ``# comment`` may follow the value (after a blank for a bare
value); CRLF line ends are accepted. References are ``${NAME}``,
``${NAME:-default}`` (the default is literal text) and ``$NAME``, to
variables already set: in the environment or earlier in the same file.
``${NAME}`` needs a non-empty value, ``$NAME`` only a set one. Command
substitution (``$(...)``, backquotes) is an error. Every error names
``file:line``.

Precedence (environment > config.env > platform .env) is decided by the
caller's *preset* names: the variables its environment set before any file
was loaded. A preset key keeps its environment value (the file's differing
value is reported as an override) unless it is *protected*: protected keys
always take the file's value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Union

from .errors import ConfigError

__all__ = ["EnvResult", "Override", "parse_env_file", "parse_env_text"]

_SPACE = " \t\n\r\f\v"
_BLANK_OR_COMMENT = re.compile(rf"[{_SPACE}]*(?:#.*)?", re.DOTALL)
_ASSIGNMENT = re.compile(rf"[{_SPACE}]*(?:export[{_SPACE}]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}")
_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_BARE_VALUE_END = re.compile(rf"[{_SPACE}]#")
_BAD_IN_BARE = re.compile(rf"[{_SPACE}\"']")

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Override:
    """A preset environment variable that kept its value although the file sets another."""

    key: str
    environment_value: str
    file_value: str
    file: str

    @property
    def message(self) -> str:
        return f"{self.key}={self.environment_value} from the environment overrides {os.path.basename(self.file)}"


@dataclass
class EnvResult:
    """What loading a file means for the caller: assignments to export (in file order) and overrides to report."""

    assignments: list[tuple[str, str]] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)

    def as_dict(self) -> dict[str, str]:
        """The final value of every assigned key (a later line wins)."""
        return dict(self.assignments)


def _expand(text: str, scope: Mapping[str, str], where: str) -> str:
    """Expand ${NAME}, ${NAME:-default} and $NAME in text; reject command substitution."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$(", i) or text[i] == "`":
            raise ConfigError(f"{where}: command substitution is not allowed in config values")
        if text[i] == "$":
            braced = _BRACED.match(text, i)
            if braced is not None:
                name = braced.group(1)
                if scope.get(name, ""):
                    out.append(scope[name])
                elif braced.group(2) is not None:
                    out.append(braced.group(3))
                else:
                    raise ConfigError(f"{where}: ${{{name}}} is not set")
                i = braced.end()
                continue
            if text.startswith("${", i):
                raise ConfigError(
                    f"{where}: unsupported expansion in '{text[i:]}' (use ${{NAME}} or ${{NAME:-default}})"
                )
            bare = _BARE.match(text, i)
            if bare is not None:
                name = bare.group(1)
                if name not in scope:
                    raise ConfigError(f"{where}: ${name} is not set")
                out.append(scope[name])
                i = bare.end()
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _double_quoted(raw: str, scope: Mapping[str, str], where: str) -> tuple[str, str]:
    """Parse a value that starts with '"'; return (value, text after the closing quote)."""
    out: list[str] = []
    segment: list[str] = []  # text still to expand; an escaped $ ends a segment
    i = 1
    while i < len(raw):
        ch = raw[i]
        if ch == "\\":
            nxt = raw[i + 1 : i + 2]
            if nxt in ('"', "\\"):
                segment.append(nxt)
            elif nxt == "`":
                out.append(_expand("".join(segment), scope, where))
                out.append("`")
                segment = []
            elif nxt == "$":
                out.append(_expand("".join(segment), scope, where))
                out.append("$")
                segment = []
            else:
                segment.append("\\" + nxt)
            i += 2
            continue
        if ch == '"':
            out.append(_expand("".join(segment), scope, where))
            return "".join(out), raw[i + 1 :]
        segment.append(ch)
        i += 1
    raise ConfigError(f"{where}: unterminated double quote")


def _value(raw: str, scope: Mapping[str, str], where: str) -> str:
    """The value of the right-hand side of KEY=VALUE."""
    if raw.startswith('"'):
        value, rest = _double_quoted(raw, scope, where)
    elif raw.startswith("'"):
        end = raw.find("'", 1)
        if end < 0:
            raise ConfigError(f"{where}: unterminated single quote")
        value, rest = raw[1:end], raw[end + 1 :]
    else:
        comment = _BARE_VALUE_END.search(raw)
        value = (raw if comment is None else raw[: comment.start()]).rstrip(_SPACE)
        if _BAD_IN_BARE.search(value):
            raise ConfigError(f"{where}: values with blanks or quotes inside must be quoted")
        return _expand(value, scope, where)
    if rest and not _BLANK_OR_COMMENT.fullmatch(rest):
        raise ConfigError(f"{where}: unexpected text after the value: {rest}")
    return value


def parse_env_text(
    text: str,
    name: str,
    environ: Mapping[str, str],
    preset: AbstractSet[str],
    protect: AbstractSet[str],
) -> EnvResult:
    """Parse the text of a config file called `name` (used in messages); see parse_env_file."""
    scope = dict(environ)
    result = EnvResult()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no new one
    for number, line in enumerate(lines, start=1):
        line = line.replace("\0", "")
        line = line.removesuffix("\r")
        if _BLANK_OR_COMMENT.fullmatch(line):
            continue
        where = f"{name}:{number}"
        match = _ASSIGNMENT.fullmatch(line)
        if match is None:
            raise ConfigError(f"{where}: expected KEY=VALUE, got: {line}")
        key, raw = match.group(1), match.group(2)
        value = _value(raw, scope, where)
        if key in preset and key not in protect:
            current = scope.get(key, "")
            if current != value:
                result.overrides.append(Override(key, current, value, name))
            continue
        scope[key] = value
        result.assignments.append((key, value))
    return result


def parse_env_file(
    path: PathLike,
    environ: Mapping[str, str],
    preset: AbstractSet[str],
    protect: AbstractSet[str],
) -> EnvResult:
    """Parse a KEY=VALUE config file without executing anything.

    environ: the variables visible to references (normally os.environ);
    preset: names the caller's environment set before any file was loaded
    (they keep their value); protect: keys always taken from the file.
    Raises ConfigError("file:line: ...") on the first bad line, or when the
    file cannot be read.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {name}: {exc.strerror or exc}") from None
    text = data.decode("utf-8", errors="surrogateescape")
    return parse_env_text(text, name, environ, preset, protect)
