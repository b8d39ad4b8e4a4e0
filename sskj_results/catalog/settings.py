"""The settings an experiment's run_bench.sh reads from the environment (or config.env, or the platform file).

One row per setting: `run_bench.sh --help` lists them, `sskj-results config` names an environment variable
that looks like one but is not (`CONCURENCIES` -> "did you mean CONCURRENCIES"), and the run records those
that say what it measures (`recorded`) in results/<RUN_ID>/run_settings.json, which RESUME=1 takes again.
An engine's `*_EXTRA_ARGS` key and the platform file's keys are settings too (catalog/engines.py,
platforms/*.env); `VALIDITY_*` keys are read by analysis/grades.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional


@dataclass(frozen=True)
class Setting:
    name: str
    what: str
    recorded: bool = False  # part of what the run measures: recorded at its start, kept by RESUME=1


SETTINGS: tuple[Setting, ...] = (
    # the run itself
    Setting("PLATFORM", "platforms/<name>.env to load (a chip name as --chip takes it: H200); default: detected"),
    Setting("RUN_ID", "the run's directory under results/ (default: the time now)"),
    Setting("RESULT_ROOT", "the run's whole directory (default: <experiment>/results/<RUN_ID>)"),
    Setting("RESUME", "1: continue RUN_ID with the settings it was started with (run_settings.json)"),
    Setting("DRY_RUN", "1: print every command the run would execute; start and write nothing"),
    Setting("STRICT", "1: a disqualified point fails the run (exit 1)"),
    Setting("OTHER_PLATFORM", "1: run an experiment on a platform other than the one its folder names"),
    # the grid
    Setting("CONCURRENCIES", "the grid's concurrencies, blank-separated (with SHAPES; else scenarios.tsv)", True),
    Setting("SHAPES", "the grid's shapes INPUTxOUTPUT, blank-separated", True),
    Setting("SCENARIOS_FILE", "the grid as a file (default: the experiment's scenarios.tsv)", True),
    Setting("REPEATS", "measurements of each scenario (default 1)", True),
    Setting("NUM_PROMPTS", "prompts of every scenario (default: per concurrency, below)", True),
    Setting("PROMPTS_PER_CONCURRENCY", "prompts per unit of concurrency (default 4)", True),
    Setting("MIN_PROMPTS", "at least this many prompts per scenario (default 8)", True),
    Setting("WARMUP_REQUESTS", "warmup completions before each scenario (default 2)", True),
    Setting("SLO_SEARCH", "1: search each shape's largest concurrency meeting the SLO instead of the grid", True),
    Setting("SLO_TIER", "the SLO tier of the search and the reports (default S2)", True),
    Setting("SLO_MIN_CONCURRENCY", "the search's first concurrency", True),
    Setting("SLO_MAX_CONCURRENCY", "the search's largest concurrency", True),
    Setting("SLO_MAX_STEPS", "measurements per shape of the search (default 32)", True),
    # the client and its prompts
    Setting("CLIENT", "sglang (python -m sglang.bench_serving) or vllm (vllm bench serve)", True),
    Setting("CLIENT_IMPL", "python or rust (the client's Rust load generator)", True),
    Setting("CLIENT_MODULE", "the client's module (default: the newest the client's Python has)", True),
    Setting("CLIENT_BACKEND", "the client's --backend (default: the engine's)", True),
    Setting("CLIENT_EXTRA_ARGS", "more words for the client", True),
    Setting("CLIENT_WARMUP_REQUESTS", "the client's own warmup requests (default 0)", True),
    Setting("PROMPT_METHOD", "auto, round-trip-set, client-random-text, ... (docs/METRICS.md)", True),
    Setting("PROMPT_TEXT", "the real text prompts are cut from", True),
    Setting("PROMPT_SET_DIR", "where the round-trip prompt sets are kept"),
    Setting("PROMPT_CHAT_TEMPLATE", "1: prompts through the model's chat template", True),
    Setting("DATASET_NAME", "the client's dataset", True),
    Setting("DATASET_PATH", "the client's dataset file", True),
    Setting("RANDOM_RANGE_RATIO", "the client's random length range ratio", True),
    Setting("SEED", "the prompts' seed (default 1)", True),
    # the engine
    Setting("MODEL_PATH", "the model (a directory with config.json)", True),
    Setting("TOKENIZER_PATH", "the tokenizer (default: MODEL_PATH)", True),
    Setting("SERVED_MODEL_NAME", "the model name the engine serves", True),
    Setting("TP", "tensor-parallel size (default: one per device of DEVICES, else the platform's DEFAULT_TP)", True),
    Setting("DEVICES", "the devices the engine sees (comma-separated)", True),
    Setting("KV_CACHE_DTYPE", "the engine's KV cache dtype", True),
    Setting("MAX_NUM_SEQS", "the engine's largest batch", True),
    Setting("MAX_MODEL_LEN", "the engine's context", True),
    Setting("CONTEXT_LEN", "the engine's context (SGLang spelling)", True),
    Setting("MEM_FRACTION", "the engine's memory fraction", True),
    Setting("SPEC_METHOD", "speculative decoding method", True),
    Setting("SPEC_TOKENS", "speculative tokens per step", True),
    Setting("SPEC_MODEL_PATH", "the drafter model", True),
    Setting("NNODES", "nodes of a multi-node engine (Slurm)", True),
    Setting("DIST_INIT_PORT", "the port of a multi-node engine's rendezvous"),
    Setting("MULTINODE_HEAD_ADDR", "the head node's address of a multi-node engine (default: the allocation's first)"),
    Setting("ENGINE_PYTHON", "the engine's Python (default: the platform file's, per engine)"),
    Setting("CLIENT_PYTHON", "the client's Python (default: the platform file's)"),
    # where and how long
    Setting("PORT", "the engine's port (auto: a free one from the platform's DEFAULT_PORT on)"),
    Setting("SERVER_HOST", "the engine's host (default 127.0.0.1)"),
    Setting("HEALTH_TIMEOUT_S", "seconds the engine may take to answer its health path (default 1800)"),
    Setting("STOP_GRACE_S", "seconds between TERM and KILL when the engine stops (default 30)"),
    Setting("PORT_FREE_TIMEOUT_S", "seconds to wait for a busy port (default 30)"),
    Setting("STOP_STALE_ENGINE", "0: refuse instead of stopping an engine a dead run left"),
    Setting("AUTO_START_CONTAINER", "1: create a missing container (Docker platforms)"),
    Setting("OOM_PATTERN", "what in the engine's log is an out-of-memory"),
    Setting("LOG_TAIL_LINES", "lines of the engine's log shown when it fails its health (default 40)"),
    Setting("SAMPLE_INTERVAL_MS", "the accelerator sampler's interval (default 1000)"),
    Setting("CONTEXT_MARGIN_PCT", "preflight's context margin over input + output (default 1)"),
    Setting("RECORD_CONFIG", "more environment variables to record in results.json config"),
    Setting("COMPARE_BASELINE", "the phase the comparison is against"),
    Setting("COMPARE_TITLE", "the comparison's title"),
    Setting("COMPARE_MATRIX", "the comparison's matrix"),
    Setting("SSKJ_ENVS_DIR", "where the engines' environments live (default <repo>/envs)"),
    Setting("SSKJ_MODELS_DIR", "where models live (default <repo>/models)"),
    Setting("SSKJ_MIN_FREE_GB", "free disk the results need (default 1)"),
)
SETTING_NAMES = frozenset(s.name for s in SETTINGS)
RECORDED = tuple(s.name for s in SETTINGS if s.recorded)
# families of settings: an unknown name that starts like one is named (SLO_TIMEOUT -> did you mean ...)
PREFIXES = ("SLO_", "COMPARE_", "SPEC_", "REPEAT", "CONCURREN", "SHAPE")


def _distance(a: str, b: str, bound: int) -> int:
    """Levenshtein distance of a and b, or bound + 1 when it exceeds bound."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def nearest(name: str, known: Iterable[str]) -> Optional[str]:
    """The known setting NAME most likely misspells: within 1 edit (names of 4 letters or less are never
    guessed), else the nearest known setting that starts like it (PREFIXES: CONCURRENCY -> CONCURRENCIES)."""
    candidates = sorted(set(known))
    if len(name) > 4:
        scored = sorted((_distance(name, k, 1), k) for k in candidates if len(k) > 4)
        if scored and scored[0][0] <= 1:
            return scored[0][1]
    prefix = next((p for p in PREFIXES if name.startswith(p)), None)
    if prefix is not None:
        family = [k for k in candidates if k.startswith(prefix)]
        return min(family, key=lambda k: (_distance(name, k, len(name) + len(k)), k)) if family else None
    return None


def misspelled(given: Iterable[str], also_known: Iterable[str]) -> list[tuple[str, str]]:
    """(name, setting) of every variable in GIVEN that is no setting but looks like one; ALSO_KNOWN: the
    platform file's and config.env's keys, the engines' keys (settings there too, never guessed: a name near
    one is as likely another program's)."""
    known = SETTING_NAMES | set(also_known)
    out = []
    for name in sorted(set(given)):
        if name in known or name.startswith("VALIDITY_") or not name.isupper():
            continue
        guess = nearest(name, SETTING_NAMES)
        if guess is not None:
            out.append((name, guess))
    return out


def recorded_values(env: Mapping[str, str]) -> dict[str, str]:
    """The recorded settings' values in ENV ("" for an unset one)."""
    return {name: env.get(name, "") for name in RECORDED}


def usage(script: str) -> str:
    """run_bench.sh --help: how it is called and every setting it reads."""
    width = max(len(s.name) for s in SETTINGS)
    lines = [f"usage: [SETTING=VALUE ...] bash {script} [--help]",
             "",
             "Runs the experiment's phases (results/<RUN_ID>/) and compares them. It takes no arguments: every",
             "setting comes from the environment, else the experiment's config.env, else the platform file.",
             "Settings marked * say what the run measures: recorded at its start, RESUME=1 takes them again",
             "and refuses a different value.",
             ""]
    lines += [f"  {s.name:<{width}} {'*' if s.recorded else ' '} {s.what}" for s in SETTINGS]
    lines += ["", "Also: an engine's *_EXTRA_ARGS (SGLANG_EXTRA_ARGS, VLLM_EXTRA_ARGS, ...), VALIDITY_* (docs/VALIDITY.md),",
              "and every key of the platform file (platforms/*.env). BENCHMARK_WORKFLOW.md, Running."]
    return "\n".join(lines) + "\n"
