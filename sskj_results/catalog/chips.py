"""The chips sskj knows by name, and how a recorded chip name becomes one of them."""

from __future__ import annotations

import re
from typing import Optional

# chips a file name may start with (platforms/*.env CHIP values and common short names)
KNOWN_CHIPS = (
    "nvidia_h200", "nvidia_h20", "nvidia_h100", "nvidia_h800", "nvidia_a100", "nvidia_a800", "nvidia_b200",
    "nvidia_l40s", "nvidia_l20", "nvidia_rtx6000d", "nvidia_rtx_pro_6000d", "kunlun_p800", "kunlunxin_p800",
    "amd_mi300x", "amd_mi325x", "h200", "h20", "h100", "h800", "a100", "a800", "b200", "gb200", "l40s", "l20",
    "mi300x", "mi325x", "mi355x", "p800", "rtx6000d", "pro6000", "pro6000d", "tpu_v5e", "tpu_v6e", "gaudi2",
    "gaudi3", "ascend_910b", "910b", "cpu",
)
# values that name a kind of device, not a chip (vLLM's and sglang's `device` option): never read as a chip
_GENERIC_DEVICES = {"cuda", "gpu", "gpus", "rocm", "hip", "npu", "xpu", "hpu", "tpu", "neuron", "auto", "mps", "", "none",
                    "null", "n/a", "na", "unknown"}
_DEVICE_COUNT = re.compile(r"^(?:\d+\s*[x×*]\s*|\d+_?x_?)", re.I)


def normalize_chip(text: str) -> Optional[str]:
    """A recorded chip name as a chip id: lower case, `_` between words, a device count (`8x`) left out;
    the longest known chip (KNOWN_CHIPS) at its start wins, else the normalized text as it is. None for a
    kind of device (`cuda`, `gpu` …)."""
    value = _DEVICE_COUNT.sub("", text.strip())
    value = re.sub(r"[^0-9a-z]+", "_", value.lower()).strip("_")
    if value in _GENERIC_DEVICES:
        return None
    for chip in sorted(KNOWN_CHIPS, key=len, reverse=True):
        if value == chip or value.startswith(chip + "_"):
            return chip
    return value[:64] or None



# short names a user types (`--chip H200`) -> the name platforms/*.env and the catalog use
CHIP_ALIASES = {
    "h200": "nvidia_h200", "h20": "nvidia_h20", "h100": "nvidia_h100", "h800": "nvidia_h800", "a100": "nvidia_a100",
    "a800": "nvidia_a800", "b200": "nvidia_b200", "l40s": "nvidia_l40s", "l20": "nvidia_l20",
    "rtx6000d": "nvidia_rtx6000d", "pro6000": "nvidia_rtx6000d", "pro6000d": "nvidia_rtx6000d",
    "nvidia_rtx_pro_6000d": "nvidia_rtx6000d", "p800": "kunlun_p800", "kunlunxin_p800": "kunlun_p800",
    "mi300x": "amd_mi300x", "mi325x": "amd_mi325x", "910b": "ascend_910b",
}
CATALOG_CHIPS = tuple(sorted({c for c in KNOWN_CHIPS if c not in CHIP_ALIASES}))


def catalog_chip(text: str) -> tuple[str, bool]:
    """(name, known) of a chip a user gave (`--chip H200`): the catalog's name (nvidia_h200) when the text
    names a known chip, else the text as given and False (the caller warns)."""
    value = normalize_chip(text)
    if value is None:
        return text, False
    value = CHIP_ALIASES.get(value, value)
    if value in CATALOG_CHIPS:
        return value, True
    return text, False


def unknown_chip_warning(text: str) -> str:
    return (f"--chip {text}: not a chip sskj knows; recorded as given (known: {' '.join(CATALOG_CHIPS)}; "
            "a new chip is added in sskj_results/catalog/chips.py)")
