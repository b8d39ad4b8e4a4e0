"""Print the words given with secret values replaced by <redacted>, NUL-terminated.

The shell's lib::quote_cmd runs this (python -I -S: no site, no PYTHONPATH)
for every command line it prints or logs; the rule is
sskj_results/contract/redact.py, the one redaction of the project.
Usage: python -I -S scripts/common/redact.py [--] WORD...   (or --lines: stdin -> stdout)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from sskj_results.contract.redact import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
