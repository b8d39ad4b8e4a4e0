# sskj — one entry point for tests. `make test` works on a fresh machine:
# it creates .venv, installs the package with its test dependencies,
# installs Debian's shellcheck, chromium and chromium-driver when missing (the
# last two open the HTML reports in a headless browser), slurm-wlm and munge
# (a local Slurm cluster for tests/cluster), and runs every test including
# the end-to-end run of experiments/cpu/tiny_vllm_ngram with a real vLLM engine.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test test-fast venv bytecode shellcheck browser slurm schema clean-venv bench

# The real-engine and Slurm tests (one local cluster, the engine's envs/
# installed once) and the fresh-venv install test run in one process beside
# the rest of the suite, which runs on two workers (pytest-xdist); each part
# prints its 15 slowest tests.
test: venv shellcheck browser slurm bytecode
	@status=0; log="$$(mktemp)"; \
	$(PY) -m pytest -m "cluster or e2e or install" --durations=15 tests >"$$log" 2>&1 & engine=$$!; \
	$(PY) -m pytest -n 2 -m "not cluster and not e2e and not install" --durations=15 tests || status=1; \
	wait "$$engine" || status=1; \
	echo "=== the real-engine and Slurm tests ==="; cat "$$log"; rm -f "$$log"; exit "$$status"

# Day-to-day: everything but the end-to-end engine run, the Slurm cluster
# tests and the tests marked slow (whole runs of the loop with a fake engine,
# ShellCheck: see the `slow` marker in pyproject.toml); the browser tests run
# when chromium is installed, and are skipped with the reason otherwise.
test-fast: venv shellcheck bytecode
	$(PY) -m pytest -n 2 -m "not e2e and not cluster and not slow" tests

venv: $(STAMP)

# The package's bytecode, written once: every `sskj-results` start of the run
# loop (and of the shell tests) then loads it instead of compiling the
# sources again, also where PYTHONDONTWRITEBYTECODE is set. Only stale files
# are compiled.
bytecode: venv
	@$(PY) -m compileall -q sskj_results >/dev/null

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

shellcheck:
	@command -v shellcheck >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's shellcheck"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null; \
	  else \
	    echo "shellcheck missing and not root: install it (apt-get install shellcheck) for the lint tests"; \
	  fi; }

# Debian's chromium and its driver, for the browser tests of report.html / comparison.html
# (and a colour emoji font, so the screenshots show the SLO marks as a reader sees them).
browser:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium, chromium-driver and fonts-noto-color-emoji"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-color-emoji >/dev/null; \
	  else \
	    echo "chromium missing and not root: install it (apt-get install chromium chromium-driver) for the browser tests"; \
	  fi; }

# Debian's Slurm and munge for tests/cluster (a real cluster on this machine).
slurm:
	@{ command -v slurmctld || test -x /usr/sbin/slurmctld; } >/dev/null 2>&1 && \
	 { command -v munged || test -x /usr/sbin/munged; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's slurm-wlm and munge"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; \
	  else \
	    echo "slurm-wlm/munge missing and not root: install them (apt-get install slurm-wlm munge) for tests/cluster"; \
	  fi; }

# The benchmarks' ratios (import, collect, energy, the pages in Chromium; a few minutes), appended to benchmarks/results/record.jsonl
# and judged against their budgets and the last entries (docs/PERFORMANCE.md). Run before stopping; CI times nothing.
bench: venv
	$(PY) benchmarks/record.py

schema: venv
	$(VENV)/bin/sskj-results schema --write schema/results.schema.json
	$(VENV)/bin/sskj-results schema --run-set --write schema/runset.schema.json

clean-venv:
	rm -rf $(VENV)
