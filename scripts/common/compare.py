#!/usr/bin/env python3
"""Side-by-side comparison of runs (e.g. SGLang vs vLLM).

Thin wrapper kept for the team's habit `python3 scripts/common/compare.py RUN_DIR... --out DIR`:
execs `sskj-results compare` with the same arguments. All logic lives in the
sskj_results package.
"""

from __future__ import annotations

import os
import sys

from sskj_tool import sskj_results_bin


def main() -> int:
    tool = sskj_results_bin()
    os.execv(tool, [tool, "compare", *sys.argv[1:]])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
