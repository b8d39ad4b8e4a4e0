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

Config files cannot run code: variables that change how programs start
(``STARTUP_VARIABLES``: BASH_ENV, ENV, PYTHONPATH, LD_PRELOAD, PATH, IFS,
...) are refused with ``file:line``. A platform that really needs one for its
engine (e.g. ``LD_LIBRARY_PATH`` for a driver) names it first in the
allow-list key ``ENGINE_STARTUP_VARS`` of the same file; the shell's own
variables (``NEVER_ALLOWED``) cannot be allowed. What an allow-list let
through is listed in ``EnvResult.startup`` (the run records it).

Platform files (``platforms/<chip>.env``) have a fixed set of keys,
``PLATFORM_KEYS``: a missing required key or an unknown key is one error
each (see ``check_platform_keys``; docs/PLATFORMS.md lists them).

Precedence (environment > config.env > platform .env) is decided by the
caller's *preset* names: the variables its environment set before any file
was loaded. A preset key keeps its environment value (the file's differing
value is reported as an override) unless it is *protected*: protected keys
always take the file's value.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Union

from .errors import ConfigError, UsageError
from .redact import redact_value_of

__all__ = [
    "ALLOW_KEY",
    "EnvResult",
    "NEVER_ALLOWED",
    "Override",
    "PLATFORM_KEYS",
    "STARTUP_VARIABLES",
    "check_platform_keys",
    "parse_env_file",
    "parse_env_text",
    "startup_variable",
]

# --- variables that change how programs start -----------------------------------

ALLOW_KEY = "ENGINE_STARTUP_VARS"
# Read by bash itself: never allowed, whatever the allow-list says.
NEVER_ALLOWED = frozenset({
    "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE",
    "BASH_XTRACEFD", "BASH_COMPAT", "BASH_LOADABLES_PATH", "EXECIGNORE", "HISTFILE", "INPUTRC", "ZDOTDIR",
    "SSKJ_RESULTS_BIN", "SSKJ_RESULTS_CMD",
})
# Loaders, interpreters and tools that run code named by a variable.
STARTUP_VARIABLES = NEVER_ALLOWED | frozenset({
    "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME",
    "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT", "PYTHONINSPECT", "PYTHONEXECUTABLE",
    "PYTHONPLATLIBDIR", "PYTHONSAFEPATH", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS",
    "NODE_PATH", "GCONV_PATH", "HOSTALIASES", "LOCPATH", "NLSPATH", "MALLOC_CONF", "JAVA_TOOL_OPTIONS",
    "TMPDIR", "HOME", "SHELL", "EDITOR", "VISUAL", "PAGER", "BROWSER", "LESSOPEN", "LESSCLOSE",
})
# Whole families: the dynamic loader, bash-exported functions, git (run for metadata), pip.
_STARTUP_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_", "PIP_", "PYTHON")
# PYTHON* variables that only tune a running interpreter.
_HARMLESS = frozenset({
    "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONFAULTHANDLER", "PYTHONNOUSERSITE",
})


def startup_variable(name: str) -> bool:
    """True for a variable that changes how programs start (refused in config files)."""
    if name in _HARMLESS:
        return False
    return name in STARTUP_VARIABLES or name.startswith(_STARTUP_PREFIXES)


# --- platform files --------------------------------------------------------------

# key -> (required: "yes" | "docker" (Docker platforms only) | "no", meaning). The one list:
# add a key here (with its meaning) and docs/PLATFORMS.md, and platform files may use it. Each engine's
# Python key (SGLANG_PYTHON, ...) is not listed here: it comes from the engine table
# (catalog/engines.py python_keys), which the caller passes as `engine_keys`.
PLATFORM_KEYS: dict[str, tuple[str, str]] = {
    "CHIP": ("yes", "chip identifier, recorded as metadata.chip and in raw file names"),
    "ACCELERATOR": ("yes", "accelerator family, recorded as metadata.accelerator"),
    "HARDWARE": ("yes", "e.g. `8x NVIDIA H200 143GB`, or `auto` (described by sskj-results metadata)"),
    "ENGINE": ("yes", "default engine of the platform (a row of the engine table, docs/PLATFORMS.md: Engines)"),
    "DEFAULT_PORT": ("yes", "server port unless PORT is set"),
    "MODEL_ROOT": ("yes", "where models live (inside the container on Docker platforms)"),
    "DOCKER_IMAGE": ("docker", "image of the engine container"),
    "CONTAINER_NAME": ("docker", "name of the engine container"),
    "CONTAINER_PYTHON": ("docker", "Python inside the container"),
    "PATCH_ROOT": ("docker", "runtime patches applied inside the container before each start"),
    "RUNTIME": ("no", "`native` (default) or `docker`"),
    "ENV_ROOT": ("no", "directory of the engine/client virtualenvs (default ${SSKJ_ENVS_DIR})"),
    "ENGINE_PYTHON": ("no", "Python of any engine without its own *_PYTHON key"),
    "CLIENT_PYTHON": ("no", "Python with the bench client (sglang.benchmark.serving or sglang.bench_serving)"),
    "CLIENT_IMPL": ("no", "`python` (default) or `rust`: the client's Rust load generator (sglang --rust-client, "
                    "vLLM VLLM_USE_RUST_BENCH=1)"),
    "CLIENT_MODULE": ("no", "the client's module when not the newest CLIENT_PYTHON has (sglang.bench_serving, ...)"),
    "WARMUP_PYTHON": ("no", "Python that runs warmup.py (default CLIENT_PYTHON)"),
    "ACCEL_SAMPLER": ("no", "`nvidia-smi`, `xpu-smi` or `none` (default by CHIP)"),
    "ACCEL_COUNT": ("no", "accelerators the platform expects to see (default: from HARDWARE `Nx ...`, else TP)"),
    "DEFAULT_TP": ("no", "tensor-parallel size of experiments unless TP= (or DEVICES=) is given (default 1)"),
    "DEVICES_ENV": ("no", "variable that limits the server to DEVICES=0,1,... (CUDA_VISIBLE_DEVICES, XPU_VISIBLE_DEVICES)"),
    "PRICE_PER_ACCEL_HOUR": ("no", "the user's price of one accelerator-hour, recorded as metadata.price_per_accel_hour "
                             "(cost per million output tokens: docs/METRICS.md#cost)"),
    "CONTAINER_PATCH_DIR": ("no", "where patches are copied inside the container"),
    "DOCKER_RUN_ARGS": ("no", "arguments of `docker run` when AUTO_START_CONTAINER=1 creates the container"),
    "AUTO_START_CONTAINER": ("no", "1: create the container when it does not exist"),
    ALLOW_KEY: ("no", "startup variables (e.g. LD_LIBRARY_PATH) this file may set for the engine; recorded"),
    # Slurm resources of scripts/common/submit.sh (sskj_results/run/slurm.py, docs/CLUSTER.md).
    "SLURM_PARTITION": ("no", "Slurm partition of the experiment jobs (sbatch --partition)"),
    "SLURM_TIME": ("no", "time limit of an experiment job (sbatch --time), e.g. 12:00:00"),
    "SLURM_ACCOUNT": ("no", "Slurm account to charge (sbatch --account)"),
    "SLURM_QOS": ("no", "Slurm quality of service (sbatch --qos)"),
    "GPUS_PER_NODE": ("no", "accelerators per node (sbatch --gpus-per-node); ignored when SLURM_GRES is set"),
    "SLURM_GRES": ("no", "generic resources per node (sbatch --gres), e.g. gpu:8 or xpu:8"),
    "SLURM_CPUS_PER_TASK": ("no", "CPUs of the job's one task per node (sbatch --cpus-per-task)"),
    "SLURM_MEM": ("no", "memory per node (sbatch --mem), e.g. 0 for all of it"),
    "SLURM_EXTRA_ARGS": ("no", "more sbatch arguments, split on blanks, e.g. --exclusive --constraint=ib"),
}
_DOCKER_KEYS = tuple(k for k, (req, _) in PLATFORM_KEYS.items() if req == "docker")


def check_platform_keys(result: "EnvResult", name: str, allowed: AbstractSet[str] = frozenset(),
                        engine_keys: AbstractSet[str] = frozenset()) -> None:
    """Raise ConfigError with one line per missing required key and per unknown key of a platform file.

    `allowed`: startup variables the file's allow-list admitted (they are known keys too); `engine_keys`:
    the optional Python key of each engine (the engine table's, passed by the caller).
    """
    problems: list[str] = []
    keys = dict(result.lines)
    known = [*PLATFORM_KEYS, *sorted(engine_keys)]
    for key, number in result.lines:
        if key not in known and key not in allowed:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(
                f"{name}:{number}: unknown platform key {key}{hint}; platform keys are listed in "
                "docs/PLATFORMS.md (new optional keys: sskj_results/contract/envfile.py PLATFORM_KEYS; an engine's "
                "Python key: its row in sskj_results/catalog/engines.py)"
            )
    docker = result.as_dict().get("RUNTIME", "native") == "docker"
    for key, (required, meaning) in PLATFORM_KEYS.items():
        if key in keys or (required == "docker" and not docker) or required == "no":
            continue
        why = "Docker platforms need" if required == "docker" else "every platform needs"
        problems.append(f"{name}: missing key {key}: {why} it ({meaning})")
    if problems:
        raise ConfigError("\nerror: ".join(problems))

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
        value = redact_value_of(self.key, self.environment_value)
        return f"{self.key}={value} from the environment overrides {os.path.basename(self.file)}"


@dataclass
class EnvResult:
    """What loading a file means for the caller: assignments to export (in file order) and overrides to report."""

    assignments: list[tuple[str, str]] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)
    # every key the file assigns, with its line (also keys the environment overrides)
    lines: list[tuple[str, int]] = field(default_factory=list)
    # startup variables let through by the file's allow-list: (key, value, "file:line")
    startup: list[tuple[str, str, str]] = field(default_factory=list)

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


def expand_references(text: str, scope: Mapping[str, str], where: str) -> str:
    """${NAME}, ${NAME:-default} and $NAME of text expanded from scope, as in a config value (ConfigError naming where)."""
    return _expand(text, scope, where)


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
    allowed: set[str] = set()
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
        result.lines.append((key, number))
        if key == ALLOW_KEY:
            never = sorted(set(value.split()) & NEVER_ALLOWED)
            if never:
                raise ConfigError(f"{where}: {ALLOW_KEY} cannot allow {' '.join(never)}: bash itself reads it")
            allowed = set(value.split())
        elif startup_variable(key):
            if key in NEVER_ALLOWED or key not in allowed:
                hint = "" if key in NEVER_ALLOWED else (
                    f" (a platform whose engine needs it lists it first in {ALLOW_KEY}=\"{key}\"; it is then recorded)"
                )
                raise ConfigError(
                    f"{where}: {key} changes how programs start and cannot be set in a config file{hint}"
                )
            result.startup.append((key, value, where))
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
    from pathlib import Path

    from .io import describe_os_error, display_name, read_checked

    name = os.fspath(path)
    try:
        # a FIFO, device, directory or looping link is refused, never read (no hang)
        data = read_checked(Path(name), "config file")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {display_name(name)}: {describe_os_error(exc)}; "
                          "give a readable KEY=VALUE file") from None
    text = data.decode("utf-8", errors="surrogateescape")
    return parse_env_text(text, name, environ, preset, protect)


def parse_assignments(items: tuple[str, ...], option: str) -> dict[str, str]:
    """`KEY=VALUE` strings to a dict; a malformed item is a usage error."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out
