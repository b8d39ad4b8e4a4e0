#!/usr/bin/env python3
"""Run the fuzzer of sskj-results' readers (see fuzzer.py and tests/fuzz/README.md).

    python tests/fuzz/run_fuzz.py --cases 10000          # the long run
    python tests/fuzz/run_fuzz.py --case 1234            # replay one case
    python tests/fuzz/run_fuzz.py --cases 500 --seed 7   # another sample
    python tests/fuzz/run_fuzz.py --start 5000 --cases 5000   # one shard of a long run

Exit 0 when no case failed, 1 otherwise (each failure is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzzer import Failure, run_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=300, help="number of cases (default 300)")
    parser.add_argument("--start", type=int, default=0, help="first case number")
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0, as the test suite)")
    parser.add_argument("--case", type=int, default=None, help="run this one case only")
    parser.add_argument("--fsync", action="store_true",
                        help="keep fsync (by default it is skipped: durability is not what is fuzzed, and it is slow)")
    args = parser.parse_args()
    if not args.fsync:
        os.fsync = lambda fd: None  # type: ignore[assignment]
    numbers = range(args.case, args.case + 1) if args.case is not None else range(args.start, args.start + args.cases)
    failures: list[Failure] = []
    started = time.monotonic()
    for i, number in enumerate(numbers, 1):
        found = run_case(number, args.seed)
        for failure in found:
            print(failure, flush=True)
        failures.extend(found)
        if i % 500 == 0:
            print(f"... {i} cases, {len(failures)} failure(s), {time.monotonic() - started:.0f} s", file=sys.stderr,
                  flush=True)
    failed_cases = len({f.case for f in failures})
    print(f"{len(numbers)} cases (seed {args.seed}), {failed_cases} failed, {time.monotonic() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
