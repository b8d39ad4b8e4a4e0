"""Work on many small objects with the cyclic garbage collector paused."""

from __future__ import annotations

import functools
import gc
from typing import Callable, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def bulk(func: Callable[P, R]) -> Callable[P, R]:
    """Run func with the cyclic garbage collector paused (restored after).

    An import allocates millions of objects without reference cycles (parsed JSON, then one small model per
    request), and so does loading and rendering a run of 20,000 scenarios; the collector would scan them over
    and over for nothing, each full pass over everything alive (a tenth of an import; a third of a report at
    20,000 scenarios). Reference counting still frees what is dropped.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return func(*args, **kwargs)
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            gc.enable()

    return wrapper
