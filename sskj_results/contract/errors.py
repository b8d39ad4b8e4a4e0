"""Typed errors of sskj_results. Only the CLI turns them into messages and exit codes."""

from __future__ import annotations


class SskjError(Exception):
    """Base class: the message is one line naming the file/field and the fix."""


class ResultsError(SskjError):
    """A results.json could not be read or does not match the contract."""


class RawFormatError(SskjError):
    """A raw client output could not be read (file:line and what is wrong)."""


class ConfigError(SskjError):
    """Bad options or configuration (unknown tier, missing chip, ...)."""


class UsageError(SskjError):
    """The command was called wrongly (exit code 2)."""


class EngineOwnershipError(SskjError):
    """What answers on the engine's port is not (only) the engine this run started: names the port and the holder."""
