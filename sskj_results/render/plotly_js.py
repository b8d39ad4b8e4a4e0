"""plotly.min.js of the installed `plotly` package, packed for a page (render/packing.py), computed once per file.

Packed with zopfli (render/packing.py pack_smallest: the same gzip format, 1,419,378 instead of gzip -9's
1,468,879 bytes for plotly.js 3.x, about 61 kB less text in every page that inlines it) when the `zopfli` package
is installed; that takes about 4 s, so the text is kept in this process and on disk, in
`$XDG_CACHE_HOME/sskj/` (else `~/.cache/sskj/`), in a file named by the SHA-256 of plotly.min.js (another plotly
version is another file). The file is written atomically (a temporary file renamed) and used only when it unpacks
to plotly.min.js itself; a cache that cannot be written or read is no error: the text is computed again. Without
zopfli, gzip -9 (about 0.2 s, not written to the cache): the pages are then about 61 kB larger.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Optional

from .packing import pack_smallest, unpack

CACHE_PREFIX = "plotly-"
CACHE_SUFFIX = ".zopfli.b91"


def _has_zopfli() -> bool:
    """Whether the `zopfli` package can be imported (then the cache is written)."""
    try:
        import zopfli.gzip  # noqa: F401
    except ImportError:
        return False
    return True


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/sskj, else ~/.cache/sskj (the XDG base directory rule: a relative XDG_CACHE_HOME is ignored)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "sskj"


def _read_cache(path: Path, data: bytes) -> Optional[str]:
    """The cached packed text, if the file is there, readable and unpacks to `data` exactly; else None."""
    try:
        text = path.read_text(encoding="ascii")
        return text if unpack(text) == data else None
    except (OSError, ValueError, EOFError):  # missing, unreadable, not base 91, not gzip: computed again
        return None


def _write_cache(path: Path, text: str) -> None:
    """`text` into `path` atomically (a temporary file in the same directory, renamed); any failure ignored."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(text)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def packed_cached(data: bytes) -> str:
    """pack_smallest(data), read from the disk cache when it is there, written to it when zopfli made it."""
    path = cache_dir() / f"{CACHE_PREFIX}{hashlib.sha256(data).hexdigest()}{CACHE_SUFFIX}"
    text = _read_cache(path, data)
    if text is None:
        text, smallest = pack_smallest(data)
        if smallest:
            _write_cache(path, text)
    return text


@functools.lru_cache(maxsize=1)
def plotly_js_packed() -> tuple[str, str]:
    """(version, plotly.min.js of the installed plotly package, packed (packed_cached()))."""
    from importlib import resources

    data = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    match = re.search(rb"plotly\.js v([0-9][0-9A-Za-z.\-]*)", data[:400])
    version = match.group(1).decode("ascii") if match else "unknown"
    return version, packed_cached(data)
