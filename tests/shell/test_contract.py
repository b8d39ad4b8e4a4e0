"""Every shipped experiment on every platform it names, in each branch of the
run loop (plain, SLO_SEARCH=1 with its SLO_TIER, RESUME=1), dry-run: each
sskj-results call is parsed by the real CLI (base_env's teardown), and each
phase's results.json config agrees with that phase's own server command."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from shellkit import REPO, engine_settings, load_json, needs_results, run_script

from sskj_results.catalog.engines import DERIVED_KEYS

pytestmark = [pytest.mark.shell, needs_results]

PLATFORMS = {"cpu": ["cpu"], "p800": ["kunlun_p800"], "h200": ["nvidia_h200", "nvidia_h20", "nvidia_rtx6000d"],
             "h20": ["nvidia_h20"], "pro6000": ["nvidia_rtx6000d"]}
EXPERIMENTS = sorted(p.parent for p in REPO.glob("experiments/*/*/run_bench.sh") if p.parent.parent.name in PLATFORMS)
CASES = [(exp, plat) for exp in EXPERIMENTS for plat in PLATFORMS[exp.parent.name]]

def check_config(config: dict, where: str) -> None:
    """Every recorded setting is what the phase's command gives in its engine's spellings (the engine row):
    a flag, a JSON option of the row or the config file the command names; null when it gives none."""
    given = engine_settings(shlex.split(config["server_args"]))
    for key in DERIVED_KEYS:
        values = given[key]
        if config.get(key) is None:
            assert not values, f"{where}: config.{key} is null but the server command gives {values}"
        else:
            assert values and all(v == str(config[key]) for v in values), (
                f"{where}: config.{key}={config[key]!r} but the server command gives {values}")


def dry_env(base_env: dict, tmp_path: Path, platform: str, **extra: str) -> dict:
    """A dry run with a small grid (the environment overrides config.env; the server commands stay the experiment's)."""
    env = dict(base_env, DRY_RUN="1", PLATFORM=platform, RUN_ID="20260707-132641", RESULT_ROOT=str(tmp_path / "r"),
               SCENARIOS_FILE=str(tmp_path / "no-scenarios.tsv"), CONCURRENCIES="1 4", SHAPES="64x8")
    env.pop("CLIENT_PYTHON")
    env.pop("ENGINE_PYTHON")
    env.update(extra)
    return env


@pytest.mark.parametrize("exp, platform", CASES, ids=[f"{e.parent.name}/{e.name}-{p}" for e, p in CASES])
def test_dry_run_config_describes_each_phase_command(tmp_path, base_env, tag, exp, platform):
    # a platform other than the experiment folder's is given knowingly (OTHER_PLATFORM=1), else refused
    env = dry_env(base_env, tmp_path, platform,
                  **({"OTHER_PLATFORM": "1"} if platform != PLATFORMS[exp.parent.name][0] else {}))
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    files = sorted((tmp_path / "r").glob("**/results.json"))
    assert files
    for file in files:
        check_config(load_json(file)["config"], str(file.relative_to(tmp_path)))


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=[f"{e.parent.name}/{e.name}" for e in EXPERIMENTS])
def test_slo_search_and_resume_branches_call_the_cli_as_it_is(tmp_path, base_env, tag, exp):
    platform = PLATFORMS[exp.parent.name][0]
    assert "SLO_TIER=" in (exp / "config.env").read_text()
    proc = run_script(exp / "run_bench.sh", dry_env(base_env, tmp_path, platform, SLO_SEARCH="1"))
    assert proc.returncode == 0, proc.stderr
    assert "SLO search" in proc.stderr and "trying concurrency" in proc.stderr
    resumed = run_script(exp / "run_bench.sh", dry_env(base_env, tmp_path, platform, RESUME="1"))
    assert resumed.returncode == 0, resumed.stderr
    # the calls themselves are checked against the CLI when base_env is torn down
