"""What a raw file's name says about its run: chip, engine, date, concurrency and lengths (NameHints).

The name is a hint, never the truth: a run's own keys win (readers). `--name-pattern` compiles a
user's own naming rule; the default rules are sglang's and sskj's.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Optional

from ..catalog.chips import KNOWN_CHIPS


@dataclass(frozen=True)
class NameHints:
    """What a file name following a convention says about its run."""

    engine: Optional[str] = None
    chip: Optional[str] = None
    mmdd: Optional[str] = None
    # the number in the first slot of `{prefix}_{MMDD}_{N}_{in}_{out}`: the concurrency in the
    # team's convention, num_prompts in sglang.bench_serving's default name (decided per run)
    concurrency: Optional[int] = None
    input_len: Optional[int] = None
    output_len: Optional[int] = None
    convention: Optional[str] = None  # "legacy" | "new" | "dataset" | "pattern" | "tokens" | None
    request_rate: Optional[float] = None
    num_prompts: Optional[int] = None
    model: Optional[str] = None
    # the chip is one of KNOWN_CHIPS (or given by --name-pattern), not just the first part of `{chip}_{engine}`
    chip_known: bool = False
    # a full date (and time) the name holds, e.g. `2026-03-24_11-23-55`, `20240301-101010`: naive, and its precision
    when: Optional[datetime] = None
    when_precision: Optional[str] = None  # "second" | "day"
    # the folder whose date gave `when` its year (the name holds only MMDD): folder_dated
    when_folder: Optional[str] = None


_NAME = re.compile(r"^(?P<prefix>.+?)_(?P<mmdd>\d{4})_(?P<c>\d+)_(?P<i>\d+)_(?P<o>\d+)(?:_r\d+)?$")
# sglang.bench_serving's default name for other datasets: {backend}_{MMDD}_{num_prompts}_{dataset}
_NAME_DATASET = re.compile(
    r"^(?P<prefix>[A-Za-z][\w.-]*?)_(?P<mmdd>\d{4})_(?P<n>\d+)_(?P<dataset>sharegpt|random(?:-ids|-image)?|"
    r"generated-shared-prefix|mmmu|image|sonnet|hf|custom|burstgpt|mooncake)$"
)
_PLACEHOLDERS = {
    "engine": r"(?P<engine>[A-Za-z][\w.-]*?)", "backend": r"(?P<engine>[A-Za-z][\w.-]*?)",
    "chip": r"(?P<chip>[A-Za-z][\w.-]*?)", "model": r"(?P<model>[\w.-]+?)",
    "mmdd": r"(?P<mmdd>\d{4})", "MMDD": r"(?P<mmdd>\d{4})",
    "concurrency": r"(?P<concurrency>\d+)", "c": r"(?P<concurrency>\d+)",
    "rate": r"(?P<rate>\d+(?:\.\d+)?)", "request_rate": r"(?P<rate>\d+(?:\.\d+)?)",
    "num_prompts": r"(?P<num_prompts>\d+)", "n": r"(?P<num_prompts>\d+)",
    "input_len": r"(?P<input_len>\d+)", "in": r"(?P<input_len>\d+)", "i": r"(?P<input_len>\d+)",
    "output_len": r"(?P<output_len>\d+)", "out": r"(?P<output_len>\d+)", "o": r"(?P<output_len>\d+)",
    "*": r".*?", "any": r".*?",
}


def compile_name_pattern(pattern: str) -> re.Pattern[str]:
    """A --name-pattern: `{chip}_{engine}_c{concurrency}_{input_len}_{output_len}` placeholders, or a regular
    expression with the same named groups (when it contains `(?P<`). Matched against the file name without suffix."""
    if "(?P<" in pattern:
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"name pattern {pattern!r} is not a valid regular expression ({exc})") from None
    out, pos, used = [], 0, set()
    for m in re.finditer(r"\{([^{}]*)\}", pattern):
        out.append(re.escape(pattern[pos:m.start()]))
        key = m.group(1)
        if key not in _PLACEHOLDERS:
            known = ", ".join("{" + k + "}" for k in _PLACEHOLDERS if len(k) > 2)
            raise ValueError(f"name pattern {pattern!r}: unknown placeholder {{{key}}}; use {known}")
        group = _PLACEHOLDERS[key]
        name = re.search(r"\?P<(\w+)>", group)
        if name and name.group(1) in used:
            raise ValueError(f"name pattern {pattern!r}: {{{key}}} given twice")
        if name:
            used.add(name.group(1))
        out.append(group)
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("^" + "".join(out) + "$")


def _chip_split(prefix: str) -> tuple[Optional[str], Optional[str]]:
    """(chip, rest) when prefix starts with a known chip."""
    low = prefix.lower()
    for chip in sorted(KNOWN_CHIPS, key=len, reverse=True):
        if low == chip:
            return prefix, None
        if low.startswith(chip + "_") or low.startswith(chip + "-"):
            return prefix[:len(chip)], prefix[len(chip) + 1:] or None
    return None, prefix


# a date-time in a name: 2026-03-24_11-23-55, 2026-03-24T11:23:55, 20240301-101010 (vLLM's default name), 20240301_101010;
# a date alone only with its dashes (2026-03-24): eight bare digits may be anything
_NAME_TIMES = (
    (re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})[_T -](\d{2})[-:.](\d{2})[-:.](\d{2})(?!\d)"), "second"),
    (re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})[-_](\d{2})(\d{2})(\d{2})(?!\d)"), "second"),
    (re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?![\d])"), "day"),
)


def name_time(stem: str) -> tuple[Optional[datetime], Optional[str]]:
    """(naive date-time, precision) of the first full date (with its time, when there is one) in a file name."""
    for pattern, precision in _NAME_TIMES:
        for match in pattern.finditer(stem):
            try:
                parts = [int(g) for g in match.groups()] + [0, 0, 0]
                return datetime(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]), precision
            except ValueError:
                continue  # not a calendar date (e.g. a 9999-99-99 run label)
    return None, None


def name_hints(stem: str, pattern: Optional[re.Pattern[str]] = None) -> NameHints:
    """What the file name says (see _name_hints), with the full date-time it holds, if any."""
    hints = _name_hints(stem, pattern)
    when, precision = name_time(stem)
    return dataclasses.replace(hints, when=when, when_precision=precision) if when is not None else hints


# a date in a folder's name: 20260707, 2026-07-07, 2026_07_07 (used only beside a file name's MMDD near it)
_FOLDER_DATE = re.compile(r"(?<!\d)(\d{4})[-_]?(\d{2})[-_]?(\d{2})(?!\d)")
FOLDER_DATE_DAYS = 31  # how far from the folder's date the file name's MMDD may fall and still take its year


def folder_dated(hints: NameHints, path: Path) -> NameHints:
    """The name's month and day (MMDD, no year) dated by the nearest folder of `path` whose name holds a full date
    (`dsv4_backend_comparison_20260707/raw_outputs/sglang_0707_…`): the year that puts MMDD nearest the folder's
    date, when that is within FOLDER_DATE_DAYS days of it (a run past midnight or New Year's Eve keeps its own
    day); otherwise the hints as they were. A date already in the name wins."""
    if hints.mmdd is None or hints.when is not None:
        return hints
    month, day = int(hints.mmdd[:2]), int(hints.mmdd[2:])
    for folder in path.absolute().parents:
        for match in _FOLDER_DATE.finditer(folder.name):
            y, m, d = (int(g) for g in match.groups())
            try:
                anchor = datetime(y, m, d)
            except ValueError:
                continue  # not a calendar date
            near = []
            for year in (y - 1, y, y + 1):
                try:
                    near.append(datetime(year, month, day))
                except ValueError:
                    continue  # 0229 outside a leap year
            if not near:
                continue
            best = min(near, key=lambda d: abs(d - anchor))
            if abs(best - anchor) <= timedelta(days=FOLDER_DATE_DAYS):
                return dataclasses.replace(hints, when=best, when_precision="day", when_folder=folder.name)
    return hints


def _name_hints(stem: str, pattern: Optional[re.Pattern[str]] = None) -> NameHints:
    """What the file name says: a --name-pattern first, then `{backend}_{MMDD}_{c}_{in}_{out}` (legacy),
    `{chip}_{engine}_{MMDD}_{c}_{in}_{out}` (new), sglang's `{backend}_{MMDD}_{n}_{dataset}`, a chip prefix."""
    if pattern is not None:
        match = pattern.match(stem)
        if match:
            groups = {k: v for k, v in match.groupdict().items() if v}

            def num(key: str) -> Optional[int]:
                return int(groups[key]) if key in groups else None

            return NameHints(
                engine=groups.get("engine"), chip=groups.get("chip"), mmdd=groups.get("mmdd"),
                concurrency=num("concurrency"), input_len=num("input_len"), output_len=num("output_len"),
                convention="pattern", request_rate=float(groups["rate"]) if "rate" in groups else None,
                num_prompts=num("num_prompts"), model=groups.get("model"), chip_known="chip" in groups,
            )
    match = _NAME.match(stem)
    if match:
        prefix = match.group("prefix")
        mmdd, concurrency = match.group("mmdd"), int(match.group("c"))
        input_len, output_len = int(match.group("i")), int(match.group("o"))
        chip, rest = _chip_split(prefix)
        known = chip is not None
        if chip is None and "_" in prefix:
            chip, rest = prefix.rsplit("_", 1)
        return NameHints(engine=rest, chip=chip, mmdd=mmdd, concurrency=concurrency, input_len=input_len,
                         output_len=output_len, convention="new" if chip else "legacy", chip_known=known)
    match = _NAME_DATASET.match(stem)
    if match:
        chip, rest = _chip_split(match.group("prefix"))
        return NameHints(engine=rest, chip=chip, mmdd=match.group("mmdd"), num_prompts=int(match.group("n")),
                         chip_known=chip is not None, convention="dataset")
    chip, _ = _chip_split(stem)
    return _token_hints(stem, chip)


# tagged tokens of free-form names, e.g. results_concurrency32_numprompt320, bench-c8-in1024-out128,
# vllm's default {backend}-{rate}qps-concurrency{N}-{model}-{date}
_TOKENS = (
    ("concurrency", re.compile(r"^(?:c|conc|concurrency|max[_-]?concurrency)(\d+)$", re.I)),
    ("input_len", re.compile(r"^(?:in|isl|input|inlen|input[_-]?len)(\d+)$", re.I)),
    ("output_len", re.compile(r"^(?:out|osl|output|outlen|output[_-]?len)(\d+)$", re.I)),
    ("num_prompts", re.compile(r"^(?:np|numprompts?|num[_-]?prompts?|prompts)(\d+)$", re.I)),
)
_RATE_TOKEN = re.compile(r"^(?:(?:qps|rps|rate)(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)(?:qps|rps))$", re.I)


def prompts_in_name(hints: NameHints, completed: int, max_concurrency: Optional[int]) -> Optional[tuple[int, str]]:
    """(N, how it was decided) when the file name states the prompts sent of a run that records no request or
    failure count; None when the name settles nothing.

    A number the convention names the prompt count counts as one: sglang.bench_serving's
    `{backend}_{MMDD}_{num_prompts}_{dataset}`, a --name-pattern's {num_prompts}, an `np320` token. The N of
    `{prefix}_{MMDD}_{N}_{in}_{out}` (any prefix: sglang's `{backend}`, a chip, a renamed one) is the prompt count
    of sglang.bench_serving's default name, or the concurrency in the team's convention (seed 000): the run's own
    max_concurrency tells which. N is the prompt count when it is at least the completed requests and is not the
    run's max_concurrency; a cap equal to N keeps the team's reading, and N below completed cannot be the prompts.
    """
    if hints.num_prompts is not None:
        if hints.num_prompts < completed:
            return None
        return hints.num_prompts, "the file name states the prompt count"
    named = hints.concurrency
    if hints.convention not in ("legacy", "new") or named is None or named < completed or max_concurrency == named:
        return None
    cap = "records no concurrency cap" if max_concurrency is None else f"records max_concurrency {max_concurrency}"
    return named, (f"the run {cap}, so the name's {named} (at least the {completed} completed) is sglang.bench_serving's "
                   "default {backend}_{MMDD}_{num_prompts}_{in}_{out}: the prompts sent")


def _token_hints(stem: str, chip: Optional[str]) -> NameHints:
    found: dict[str, int] = {}
    rate = None
    for token in re.split(r"[_\-]", stem):
        for key, pattern in _TOKENS:
            m = pattern.match(token)
            if m and key not in found:
                found[key] = int(m.group(1))
        m = _RATE_TOKEN.match(token)
        if m and rate is None:
            rate = float(m.group(1) or m.group(2))
    if not found and rate is None:
        return NameHints(chip=chip, chip_known=chip is not None)
    return NameHints(chip=chip, chip_known=chip is not None, concurrency=found.get("concurrency"), input_len=found.get("input_len"),
                     output_len=found.get("output_len"), num_prompts=found.get("num_prompts"), request_rate=rate,
                     convention="tokens")

