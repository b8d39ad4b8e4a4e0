#!/usr/bin/env python3
"""Re-parse a run of this experiment and rewrite its results.json and report.md.

    python3 experiments/<platform>/<name>/parse_results.py experiments/<platform>/<name>/results/<RUN_ID>

RUN_ID may be one run directory or a multi-phase run set: then every phase,
the run set's index and its comparison.md are rewritten too. Options:
--slo-tier S1|S2|S3, --no-plots. A thin entry point: `sskj-results reparse`
does the work (found by scripts/common/sskj_tool.py).
"""

import sys
from pathlib import Path

COMMON = next(p for p in Path(__file__).resolve().parents if (p / "scripts/common/sskj_tool.py").is_file())
sys.path.insert(0, str(COMMON / "scripts" / "common"))
from sskj_tool import exec_sskj_results  # noqa: E402

exec_sskj_results("reparse", *sys.argv[1:])
