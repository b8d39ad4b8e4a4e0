"""The one redaction of secrets, for every writer and every printed command line.

Stdlib only, so that ``scripts/common/redact.py`` (run by the shell's
``lib::quote_cmd`` with ``python -I -S``) loads it in milliseconds: bash has
no redaction of its own. ``sskj-results redact`` is the same as a subcommand.

What counts as a secret
-----------------------
A *secret name* has, after lower-casing and reading ``-`` as ``_``, one
``_``-separated component that is a secret word: ``token``, ``key``,
``apikey``, ``secret``, ``password``, ``passwd``, ``auth``,
``credential(s)``, ``cookie`` (``HF_TOKEN``, ``OpenAI-Api-Key``,
``aws_secret_access_key``). Plural or longer words are not secret words:
``--max-num-batched-tokens``, ``--tokenizer``, ``MAX_TOKENS``,
``--kv-cache-dtype`` stay as they are.

For an *option* (``--name``) the secret word must be its last component:
``--api-key``, ``--hf_token``, ``--auth``, ``--client-secret`` carry a secret
value, while ``--disable-auth-check`` or ``--token-file`` (a path) do not.

Forms replaced by ``<redacted>`` (the name stays, so the record still says
that a secret was given):

* ``--name=VALUE`` and ``--name VALUE`` (a next word that starts with ``-``
  is another option, not a value);
* ``NAME=VALUE`` words (environment assignments), also as the value of
  ``--env``/``-e`` (``--env=K=V``, ``--env K=V``, ``-e K=V``, ``-eK=V``);
* HTTP headers given with ``-H``/``--header`` whose name is a secret name
  or ``Authorization``/``Proxy-Authorization`` (``Authorization: Bearer
  <redacted>``), and ``Bearer``/``Basic`` credentials anywhere;
* ``-u``/``--user USER:PASSWORD`` (curl): ``USER:<redacted>``;
* credentials in URLs (``https://user:<redacted>@host``,
  ``https://<redacted>@host``) and secret-named query parameters
  (``?api_key=<redacted>``);
* ``"secret_name": "value"`` pairs inside JSON arguments.

Redaction is idempotent: redacting a redacted line changes nothing.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

REDACTED = "<redacted>"

SECRET_WORDS = frozenset(
    {"token", "key", "apikey", "secret", "password", "passwd", "auth", "credential", "credentials", "cookie"}
)
# Header names that carry credentials although no component is a secret word.
_SECRET_HEADERS = frozenset({"authorization", "proxy_authorization"})
_SCHEMES = frozenset({"bearer", "basic", "token", "digest"})
_ENV_OPTIONS = frozenset({"--env", "-e"})
_HEADER_OPTIONS = frozenset({"--header", "-H"})
_USER_OPTIONS = frozenset({"--user", "-u", "--proxy-user", "-U"})

_NAME_SPLIT = re.compile(r"[_\-.]+")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)=(.*)", re.DOTALL)
_OPTION = re.compile(r"(--?[A-Za-z0-9][A-Za-z0-9_.\-]*)(=(.*))?", re.DOTALL)
# scheme://userinfo@host : userinfo is user:password or a bare token
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)([^/\s@:'\"]*)(?::([^/\s@'\"]*))?@")
_URL_QUERY = re.compile(r"([?&;])([A-Za-z0-9_.\-]+)=([^&#;\s'\"]*)")
_BEARER = re.compile(r"\b(Bearer|Basic|Token)(\s+)([^\s'\"\\]+)", re.IGNORECASE)
# "name": "value" in JSON, also when the quotes are backslash-escaped (printf %q output)
_JSON_KEY = re.compile(r'[{,]?\\?"?([A-Za-z0-9_.\-]+)\\?"?:')
_JSON_PAIR = re.compile(r'(\\?"([A-Za-z0-9_.\-]+)\\?"\s*:\s*\\?")((?:[^"\\]|\\[^"])*)(\\?")')


def is_secret_name(name: str) -> bool:
    """True when a component of NAME (split on _ - .) is a secret word, in any case."""
    return any(part in SECRET_WORDS for part in _NAME_SPLIT.split(name.lower()) if part)


def is_secret_option(option: str) -> bool:
    """True for an option (--api-key, --hf_token, -password) whose last name component is a secret word."""
    parts = [p for p in _NAME_SPLIT.split(option.lstrip("-").lower()) if p]
    return bool(parts) and parts[-1] in SECRET_WORDS


def _is_secret_header(name: str) -> bool:
    normalized = name.strip().lower().replace("-", "_")
    return normalized in _SECRET_HEADERS or is_secret_name(normalized)


def redact_value_of(name: str, value: str) -> str:
    """The value to record for a variable or config key called NAME."""
    if value and is_secret_name(name):
        return REDACTED
    return redact_text(value)


def _redact_fragments(word: str) -> str:
    """Secrets inside one word that need no context: URLs, Bearer credentials, JSON pairs."""
    if "://" in word and "@" in word:
        def userinfo(m: re.Match[str]) -> str:
            user, password = m.group(2), m.group(3)
            if password is not None:
                return f"{m.group(1)}{user}:{REDACTED}@"
            return f"{m.group(1)}{REDACTED}@" if user else m.group(0)

        word = _URL_USERINFO.sub(userinfo, word)
    if "=" in word and ("?" in word or "&" in word):
        word = _URL_QUERY.sub(
            lambda m: f"{m.group(1)}{m.group(2)}={REDACTED}" if is_secret_name(m.group(2)) and m.group(3) else m.group(0),
            word,
        )
    word = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", word)
    if '"' in word:
        word = _JSON_PAIR.sub(
            lambda m: f"{m.group(1)}{REDACTED}{m.group(4)}" if is_secret_name(m.group(2)) and m.group(3) else m.group(0),
            word,
        )
    return word


def _redact_assignment(word: str) -> Optional[str]:
    """NAME=VALUE with a secret NAME -> NAME=<redacted>; None when WORD is no such assignment."""
    m = _ASSIGN.fullmatch(word)
    if m and m.group(2) and is_secret_name(m.group(1)):
        return f"{m.group(1)}={REDACTED}"
    return None


def _redact_header(value: str) -> str:
    name, sep, rest = value.partition(":")
    if sep and rest.strip() and _is_secret_header(name):
        return f"{name}: {REDACTED}"
    return value


def _redact_user(value: str) -> str:
    user, sep, password = value.partition(":")
    return f"{user}:{REDACTED}" if sep and password else value


def redact_argv(words: Sequence[str]) -> List[str]:
    """Copy of an argument vector with every secret value replaced by <redacted>."""
    out: List[str] = []
    pending: Optional[str] = None  # what the previous word says about this one
    for word in words:
        if pending is not None:
            kind, pending = pending, None
            if kind == "value" and word.lower() in _SCHEMES:
                pending = "value"  # Authorization: Bearer VALUE
                out.append(word)
                continue
            if kind == "value" and not word.startswith("-"):
                out.append(REDACTED if word else word)
                continue
            if kind == "env":
                out.append(_redact_assignment(word) or _redact_fragments(word))
                continue
            if kind == "header":
                out.append(_redact_fragments(_redact_header(word)))
                name, sep, rest = word.partition(":")
                if sep and not rest.strip() and _is_secret_header(name):
                    pending = "value"  # -H 'Authorization:' split from its value in free text
                continue
            if kind == "user":
                out.append(_redact_user(word))
                continue
        option = _OPTION.fullmatch(word)
        if option is not None:
            name, value = option.group(1), option.group(3)
            if value is None:
                if name in _ENV_OPTIONS:
                    pending = "env"
                elif name in _HEADER_OPTIONS:
                    pending = "header"
                elif name in _USER_OPTIONS:
                    pending = "user"
                elif name.startswith("-") and is_secret_option(name):
                    pending = "value"
                out.append(word)
                continue
            if name in _ENV_OPTIONS:
                out.append(f"{name}={_redact_assignment(value) or _redact_fragments(value)}")
                continue
            if name in _HEADER_OPTIONS:
                out.append(f"{name}={_redact_fragments(_redact_header(value))}")
                header, sep, rest = value.partition(":")
                if sep and not rest.strip() and _is_secret_header(header):
                    pending = "value"
                continue
            if name in _USER_OPTIONS:
                out.append(f"{name}={_redact_user(value)}")
                continue
            if is_secret_option(name):
                out.append(f"{name}={REDACTED}" if value else word)
                continue
            out.append(f"{name}={_redact_word(value)}")
            continue
        if word.lower() == "bearer":
            pending = "value"
            out.append(word)
            continue
        key = _JSON_KEY.fullmatch(word)
        if key is not None and is_secret_name(key.group(1)):
            pending = "value"  # {"hf_token": "value"} split into words in free text
            out.append(word)
            continue
        assigned = _redact_assignment(word)
        out.append(assigned if assigned is not None else _redact_word(word))
    return out


def _redact_word(word: str) -> str:
    """One word's secrets; a word holding a whole command line (`--server-args 'vllm serve m --api-key V'`) is
    redacted as the command line it is."""
    word = _redact_fragments(word)
    if any(c in word for c in " \t\n") and word.lstrip()[:1] not in ("{", "["):  # JSON: its pairs are done above
        return redact(word)
    return word


# --- command lines as text ------------------------------------------------------


def _words(line: str) -> Iterator[Tuple[int, int, str]]:
    """(start, end, unquoted text) of each shell word of LINE; lenient with unterminated quotes."""
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i] in " \t\n":
            i += 1
        if i >= n:
            return
        start = i
        text: List[str] = []
        while i < n and line[i] not in " \t\n":
            ch = line[i]
            if ch == "\\" and i + 1 < n:
                text.append(line[i + 1])
                i += 2
            elif ch == "'":
                end = line.find("'", i + 1)
                end = n if end < 0 else end
                text.append(line[i + 1 : end])
                i = end + 1
            elif ch == "$" and line.startswith("$'", i):
                end = i + 2
                while end < n and line[end] != "'":
                    end += 2 if line[end] == "\\" else 1
                text.append(line[i + 2 : min(end, n)])
                i = end + 1
            elif ch == '"':
                j = i + 1
                while j < n and line[j] != '"':
                    if line[j] == "\\" and j + 1 < n and line[j + 1] in '"\\$`':
                        text.append(line[j + 1])
                        j += 2
                        continue
                    text.append(line[j])
                    j += 1
                i = j + 1
            else:
                text.append(ch)
                i += 1
        yield start, min(i, n), "".join(text)


def _quote_for(new: str) -> str:
    """A redacted word written back: unquoted when it needs no quotes (``<redacted>`` stays readable)."""
    if new and re.fullmatch(r"[A-Za-z0-9_@%+=:,./<>\-]+", new):
        return new
    return "'" + new.replace("'", "'\\''") + "'"


# Lines up to this long are remembered (the redaction is a pure function of the line): the notes of 20,000
# scenarios repeat the same few lines, redacted again each time a results.json is loaded or written.
_CACHED_LINE = 512


def redact(command: str) -> str:
    """A command line (or any line of text) with secret values replaced by <redacted>.

    Words whose meaning does not change keep their original spelling; a word
    that changes is written back unquoted when it can be, else single-quoted.
    """
    if len(command) <= _CACHED_LINE:
        return _redact_short(command)
    return _redact(command)


@functools.lru_cache(maxsize=1 << 14)
def _redact_short(command: str) -> str:
    return _redact(command)


def _redact(command: str) -> str:
    if not command:
        return command
    spans = list(_words(command))
    if not spans:
        return command
    texts = [text for _, _, text in spans]
    redacted = redact_argv(texts)
    pieces: List[str] = []
    last = 0
    for (start, end, text), new in zip(spans, redacted):
        pieces.append(command[last:start])
        raw = command[start:end]
        pieces.append(raw if new == text else _quote_for(new))
        last = end
    pieces.append(command[last:])
    return "".join(pieces)


def redact_text(text: str) -> str:
    """Every line of TEXT redacted as a command line (for logs and free-text fields)."""
    return "\n".join(redact(line) for line in text.split("\n"))


def redact_lines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        yield redact(line)


def main(argv: Sequence[str]) -> int:
    """``[--] WORD...`` prints the redacted words NUL-terminated; ``--lines`` copies stdin to
    stdout with every line redacted."""
    args = list(argv)
    if args[:1] == ["--lines"]:
        for line in sys.stdin:
            sys.stdout.write(redact(line.rstrip("\n")) + "\n")
        sys.stdout.flush()
        return 0
    if args[:1] == ["--"]:
        args = args[1:]
    out = sys.stdout.buffer
    for word in redact_argv([a for a in args]):
        out.write(word.encode("utf-8", "surrogateescape") + b"\0")
    out.flush()
    return 0

