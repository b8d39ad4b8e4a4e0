"""Redaction of secrets from recorded command lines."""

from __future__ import annotations

import re

REDACTED = "<redacted>"
_SECRET_FLAG = r"--(?:api-key|api_key|hf-token|hf_token|token|auth-token|access-token|password|secret)"
_PATTERNS = (
    # --api-key VALUE / --api-key=VALUE (value possibly quoted)
    re.compile(rf"({_SECRET_FLAG})(=|\s+)('[^']*'|\"[^\"]*\"|\S+)"),
    # NAME_TOKEN=VALUE, NAME_KEY=VALUE, NAME_SECRET=VALUE, NAME_PASSWORD=VALUE in env prefixes or -e flags
    re.compile(r"(\b[A-Za-z0-9_]*(?:TOKEN|API_KEY|SECRET|PASSWORD)[A-Za-z0-9_]*)(=)('[^']*'|\"[^\"]*\"|\S+)"),
    # Authorization: Bearer VALUE
    re.compile(r"(Bearer)(\s+)('[^']*'|\"[^\"]*\"|[^\s'\"]+)"),
)


def redact(command: str) -> str:
    """Replace secret values in a shell command line with <redacted>."""
    for pattern in _PATTERNS:
        command = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", command)
    return command
