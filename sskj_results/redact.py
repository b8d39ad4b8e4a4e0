"""Redaction of secrets from recorded command lines (same rule as lib::redact_args in lib.sh)."""

from __future__ import annotations

import re

REDACTED = "<redacted>"
_VALUE = r"('[^']*'|\"[^\"]*\"|\S+)"
_PATTERNS = (
    # --api-key VALUE / --hf-token=VALUE / --password VALUE: options whose last word is a secret word
    re.compile(rf"(?<!\S)(--(?:[A-Za-z0-9]+-)*(?:api-key|apikey|token|secret|password|passwd))(=|\s+){_VALUE}", re.I),
    # NAME=VALUE where one _-separated part of NAME is KEY, APIKEY, TOKEN, SECRET, PASSWORD or PASSWD
    re.compile(rf"(?<![\w-])((?:[A-Za-z0-9]+_)*(?:KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD)(?:_[A-Za-z0-9]+)*)(=){_VALUE}", re.I),
    # Authorization: Bearer VALUE
    re.compile(r"(Bearer)(\s+)('[^']*'|\"[^\"]*\"|[^\s'\"]+)"),
)


def redact(command: str) -> str:
    """Replace secret values in a shell command line with <redacted>."""
    for pattern in _PATTERNS:
        command = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", command)
    return command
