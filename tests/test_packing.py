"""render/packing.py's smallest gzip and integer bytes, render/plotly_js.py's cache of plotly.js packed."""

from __future__ import annotations

import builtins
import os
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from sskj_results.render import plotly_js
from sskj_results.render.history import PREDICT, residuals
from sskj_results.render.packing import pack, pack_smallest, unpack, unvarints, varints


def test_varints_are_exact_and_byte_planes() -> None:
    values = [0, -1, 1, -64, 63, 64, -65, 8191, 8192, 2 ** 40 + 3, -(2 ** 52), 2 ** 53, 12345, -7]
    data = varints(values)
    assert unvarints(data, len(values)) == values
    # zigzag: 0 -> 0, -1 -> 1, 1 -> 2; the first 7-bit group of every value comes first
    assert varints([0, -1, 1]) == bytes([0, 1, 2])
    assert varints([64, 0]) == bytes([128, 0, 1])  # 64 -> 128: group 0 (with "more"), the other value, group 1
    assert len(data) == sum(max(1, -(-(2 * abs(v) - (v < 0)).bit_length() // 7)) for v in values)
    with pytest.raises(ValueError, match="not varints"):
        unvarints(data[:-1], len(values))
    with pytest.raises(ValueError, match="not varints"):
        unvarints(data + b"\0", len(values))


def test_residuals_are_each_value_less_the_rounded_mean_of_the_ones_before() -> None:
    ints = [1000, 1010, 990, 1004, 1001, 2000, -5, 0]
    out = residuals(ints)
    assert out[:3] == [1000, 10, -15]  # 1010 - 1000; 990 - (2010 + 1) // 2
    back: list[int] = []  # assets/history.js withValues
    for r in out:
        before = back[-PREDICT:]
        back.append(r + ((sum(before) + len(before) // 2) // len(before) if before else 0))
    assert back == ints and out[5] == 2000 - (1010 + 990 + 1004 + 1001 + 2) // 4


def test_pack_smallest_is_gzip_and_falls_back_to_gzip_9_without_zopfli(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"plotly " * 5000 + bytes(range(256)) * 40
    text, by_zopfli = pack_smallest(data)
    assert unpack(text) == data and by_zopfli == (plotly_js._has_zopfli())
    real_import = builtins.__import__

    def no_zopfli(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("zopfli"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_zopfli)
    assert pack_smallest(data) == (pack(data), False)


def _plotly() -> bytes:
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()


@pytest.mark.skipif(not plotly_js._has_zopfli(), reason="zopfli is not installed")
def test_plotly_packed_once_cached_on_disk_keyed_by_its_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = b"var plotly = 1;\n" * 20000
    text = plotly_js.packed_cached(data)
    (cached,) = (tmp_path / "cache" / "sskj").iterdir()
    assert cached.name.startswith("plotly-") and cached.read_text(encoding="ascii") == text and unpack(text) == data
    assert [p.name for p in cached.parent.iterdir()] == [cached.name]  # no temporary file left
    calls = []
    monkeypatch.setattr(plotly_js, "pack_smallest", lambda d: calls.append(d) or ("never", True))
    assert plotly_js.packed_cached(data) == text and calls == []  # read back, not computed again
    other = data + b"//"
    plotly_js.packed_cached(other)
    assert calls == [other]  # another file, another key
    cached.write_text("12 not what was written", encoding="ascii")  # a damaged cache: computed again
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert plotly_js.packed_cached(data) == text and cached.read_text(encoding="ascii") == text


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # sskj/ cannot be made under a file
    data = b"var plotly = 2;\n" * 5000
    assert unpack(plotly_js.packed_cached(data)) == data
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored, as the XDG rule says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert plotly_js.cache_dir() == tmp_path / "home" / ".cache" / "sskj"
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        monkeypatch.setenv("XDG_CACHE_HOME", str(ro))
        assert unpack(plotly_js.packed_cached(data)) == data


def test_the_pages_plotly_is_the_cached_one() -> None:
    version, text = plotly_js.plotly_js_packed()
    assert unpack(text) == _plotly()
    if plotly_js._has_zopfli():  # zopfli's is smaller than gzip -9's (1,419,378 against 1,468,879 bytes for 3.x)
        assert len(text) < len(pack(_plotly())) - 40_000
