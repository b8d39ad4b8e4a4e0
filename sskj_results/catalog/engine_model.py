"""An engine row's shape: the `Engine` and `Counters` records and the setting keys they speak of.

The rows themselves, and every function that reads them, are in catalog/engines.py (which re-exports these
names): this module holds only what a row is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..contract.errors import ConfigError

# config key -> what it means (keys derived from the server command)
DERIVED_KEYS = ("tp", "kv_cache_dtype", "max_num_seqs", "max_model_len", "spec_method", "spec_tokens", "spec_model")
# settings in the workflow's terms (`--setting KEY=VALUE`): the derived keys plus settings that are not recorded
# from the command (mem_fraction: SGLang's --mem-fraction-static, vLLM's --gpu-memory-utilization)
SETTING_KEYS = (*DERIVED_KEYS, "mem_fraction")
# multi-node styles: how the ranks of one server find each other (run/launch.py multinode_args); "" single node only
MULTINODE_STYLES = ("dist-init", "master-addr", "")
METRICS_FORMATS = ("prometheus", "")  # what GET /metrics answers; "" no metrics endpoint sskj can read
SPEC_KEYS = ("spec_method", "spec_tokens", "spec_model")


@dataclass(frozen=True)
class Counters:
    """The Prometheus counters an engine's GET /metrics exposes, under its own names ("" where it has none).

    Acceptance is read one of two ways: `drafts` and `accepted` (1 + accepted / drafting steps, with the
    accepted tokens per draft position from `accepted_per_position`, samples labelled position="k"), or
    `verify_calls` (generation tokens / verification steps)."""

    prompt_tokens: str = ""        # prompt tokens processed
    generation_tokens: str = ""    # tokens generated
    cached_tokens: str = ""        # prompt tokens served from the prefix cache
    drafts: str = ""               # speculative drafting steps
    accepted: str = ""             # accepted draft tokens
    accepted_per_position: str = ""  # accepted draft tokens per draft position (the name's prefix)
    verify_calls: str = ""         # speculative verification steps
    drafts_family: str = ""        # the drafting counters as messages name them together (vllm:spec_decode_*)

    @property
    def acceptance(self) -> str:
        """How acceptance is read from these counters: `drafted`, `verified`, or "" (none)."""
        if self.drafts and self.accepted:
            return "drafted"
        return "verified" if self.verify_calls and self.generation_tokens else ""

    @property
    def acceptance_name(self) -> str:
        """The acceptance counters as a message names them."""
        return (self.drafts_family or f"{self.drafts}, {self.accepted}") if self.acceptance == "drafted" \
            else self.verify_calls

@dataclass(frozen=True)
class Engine:
    name: str                      # prefix the phase's engine name starts with (longest match wins)
    label: str                     # the engine's name in prose (docs, platform-key meanings)
    python_var: str                # platform key holding the engine environment's interpreter
    launch_module: str             # python -m <module> [launch_args] starts the OpenAI-compatible server
    flags: dict[str, tuple[str, ...]]  # setting key -> option spellings (first = the one experiments use)
    dists: tuple[str, ...]         # packages whose version is the engine version
    client_backends: dict[str, str]  # client (CLIENT: sglang, vllm) -> its --backend word against this engine
    head: tuple[str, ...]          # words right after the launch point: {model}, {tp}, {metrics} or literal flags
    extra_args_var: str            # setting whose words end the command (split on blanks, first line only)
    reset_path: str = ""           # POST: drop the prefix cache between scenarios; "" none
    metrics: str = ""              # GET /metrics format before/after each scenario (METRICS_FORMATS); "" none
    multinode: str = ""            # MULTINODE_STYLES; "" single node only
    health_path: str = "/health"
    launch_args: tuple[str, ...] = ()  # words after `-m <module>` (vLLM: the `serve` subcommand)
    console_script: tuple[str, ...] = ()  # the same launch point as a console script (`vllm serve`), read back only
    metrics_flags: tuple[str, ...] = ()  # server flags that turn /metrics on (SGLang: --enable-metrics)
    model_flag: str = ""               # how the model is given after the launch point: "" positional, else this flag
    server_env: tuple[str, ...] = field(default_factory=tuple)  # KEY=VALUE the server needs from the workflow
    # setting key -> {experiment value: this engine's spelling of it}
    values: dict[str, dict[str, str]] = field(default_factory=dict)
    # a JSON-valued option that carries settings: option -> {setting key: key in its JSON object}
    json_options: dict[str, dict[str, str]] = field(default_factory=dict)
    config_file_flags: tuple[str, ...] = ()  # option naming the engine's config file (first = the one written)
    file_keys: dict[str, str] = field(default_factory=dict)  # setting key -> dotted key in that file
    aliases: tuple[str, ...] = ()  # other names of this engine in raw files (framework keys, request formats)
    spec_tokens_are_draft: bool = False  # config.spec_tokens is the draft length (not counting the root token)
    # config.spec_tokens counts the verified root token too (SGLang's --speculative-num-draft-tokens of a chain):
    # the draft length is one less
    spec_tokens_count_root: bool = False
    dp_flags: tuple[str, ...] = ()  # data-parallel size spellings (the accelerators of a phase: ingest/power.py)
    base: str = ""  # the engine this one is a build of (vLLM for its CPU, XPU and DSpark builds); "" itself
    # the engine's own program (llama.cpp's llama-server), started instead of `python -m <launch_module>`:
    # `python_var` then names the platform key holding its path, else it is looked up on PATH; its launch
    # point is `console_script` (the program's name), its version is unknown to a Python
    program: str = ""
    host_flag: str = "--host"  # the address the server listens on
    port_flag: str = "--port"
    name_flags: tuple[str, ...] = ()  # the name the model is served under: no setting (configuration differences)
    # words that make a server flag speculative wherever they start a word of its name (--speculative-*, --spec-*)
    spec_words: tuple[str, ...] = ()
    counters: Counters = Counters()  # its /metrics counters (none without a Prometheus /metrics)
    version_keys: tuple[str, ...] = ()  # keys of a raw file's `server_config` holding this engine's version
    # a raw-file key holding an answer only this engine gives (SGLang's /get_server_info, which
    # sglang.bench_serving records as `server_info`): its presence names the engine
    info_key: str = ""
    info_path: str = ""  # the endpoint that answer comes from
    always_speculative: bool = False  # every phase of it decodes speculatively (vLLM-DSpark), not only with SPEC_METHOD
    synthetic_env: tuple[str, ...] = ()  # environment variables that make acceptance a setting (profiling)
    synthetic_keys: tuple[str, ...] = ()  # keys of its JSON options that make acceptance a setting

    @property
    def spellings(self) -> frozenset[str]:
        """Every flag spelling the row holds: its settings' flags, host, port, model and served-name flags, the
        flags of its head and of /metrics, its JSON and config-file options, its data-parallel flags."""
        flags = {f for spellings in self.flags.values() for f in spellings}
        flags |= {self.host_flag, self.port_flag, *self.name_flags, *self.metrics_flags, *self.json_options,
                  *self.config_file_flags, *self.dp_flags, *(w for w in self.head if w.startswith("-"))}
        return frozenset(flags | ({self.model_flag} if self.model_flag else set()))

    @property
    def speculative(self) -> bool:
        """Whether the engine decodes speculatively at all: a speculative setting of its own (flag or file key)."""
        return any(key in self.flags or key in self.file_keys for key in SPEC_KEYS)

    @property
    def lineage(self) -> str:
        """The engine a plain run must be of for a speculative run of this one to be compared with it."""
        return self.base or self.name

    def flags_for(self, settings: list[tuple[str, str]]) -> list[str]:
        """`--flag value` words of this engine for settings (key, value); empty values, settings of the
        config file (`file_settings`) and spec_tokens / spec_model beside an empty spec_method are left out."""
        words: list[str] = []
        for key, value in _given(settings):
            if value == "" and key not in self.flags and key not in self.file_keys:
                continue  # an empty setting says nothing, also of a setting the engine has not
            if key not in self.flags and key not in self.file_keys:
                known = ", ".join(sorted({*self.flags, *self.file_keys}))
                raise ConfigError(f"engine {self.name} has no setting {key!r} (known: {known})")
            if value == "" or key in self.file_keys:
                continue
            words += [self.flags[key][0], self.spelled(key, value)]
        return words

    def spelled(self, key: str, value: str) -> str:
        return self.values.get(key, {}).get(value, value)

    def file_settings(self, settings: list[tuple[str, str]]) -> dict[str, Any]:
        """The engine's config-file content for the settings that live there (nested by dotted key; empty
        values left out); {} when none does."""
        out: dict[str, Any] = {}
        for key, value in _given(settings):
            if key not in self.file_keys or value == "":
                continue
            *parents, last = self.file_keys[key].split(".")
            node = out
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = _typed(key, self.spelled(key, value))
        return out


def _given(settings: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The settings that say something: a draft length or model without a speculative method (spec_method
    given empty) says nothing."""
    if ("spec_method", "") in settings:
        return [(k, v) for k, v in settings if k not in ("spec_tokens", "spec_model")]
    return settings


def _typed(key: str, text: str) -> Any:
    if key in ("tp", "max_num_seqs", "spec_tokens") or (key == "max_model_len" and text.isdigit()):
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"server command: {key} value {text!r} is not a whole number") from None
    return text
