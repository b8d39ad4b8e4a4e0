#!/usr/bin/env python3
"""Raw outputs of a run -> results.json + report.md.

Thin wrapper kept for the team's habit `python3 scripts/common/parse_backend.py RUN_DIR`:
runs `sskj-results parse RUN_DIR [--slo-tier NAME]`, then execs
`sskj-results report RUN_DIR`. All logic lives in the sskj_results package.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from sskj_tool import sskj_results_bin


def main() -> int:
    parser = argparse.ArgumentParser(description="sskj-results parse + report for one run directory")
    parser.add_argument("run_dir")
    parser.add_argument("--slo-tier", default=None)
    args = parser.parse_args()
    tool = sskj_results_bin()
    parse_cmd = [tool, "parse", args.run_dir]
    if args.slo_tier:
        parse_cmd += ["--slo-tier", args.slo_tier]
    rc = subprocess.call(parse_cmd)
    if rc != 0:
        return rc
    os.execv(tool, [tool, "report", args.run_dir])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
