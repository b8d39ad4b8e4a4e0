"""Creating an experiment directory from experiments/TEMPLATE or from an existing experiment.

``sskj-results new-experiment PLATFORM NAME [--from EXPERIMENT]`` (and its
wrapper ``scripts/common/new_experiment.sh``) copies the source experiment's
files (never its results/) to ``experiments/<PLATFORM>/<NAME>/``, sets
``EXPERIMENT="<NAME>"`` in config.env and the name and paths in README.md,
refuses to overwrite anything, and returns the dry-run command to try.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..contract.errors import ConfigError, UsageError
from ..contract.names import name_problem

# Directories of an experiment that are never copied: results and benchmark intermediates.
_SKIP = {"results", "raw_outputs", "logs", "gpu_logs", "server_metrics", "__pycache__"}
# experiments/<dir> names whose platform file is not found by the rules of platform_for_dir.
EXPERIMENT_DIR_PLATFORMS = {"pro6000": "nvidia_rtx6000d"}
_STRICT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def platform_for_dir(repo: Path, directory: str) -> Optional[str]:
    """The platform file an experiments/<directory>/ belongs to: platforms/<directory>.env, the
    one platform named *_<directory>, or a known alias (pro6000 -> nvidia_rtx6000d); else None."""
    names = sorted(p.stem for p in (repo / "platforms").glob("*.env"))
    if directory in names:
        return directory
    alias = EXPERIMENT_DIR_PLATFORMS.get(directory)
    if alias in names:
        return alias
    suffixed = [n for n in names if n.endswith(f"_{directory}")]
    return suffixed[0] if len(suffixed) == 1 else None


@dataclass
class NewExperiment:
    path: Path
    source: Path
    platform: Optional[str]
    dry_run: str


def _check(kind: str, value: str) -> None:
    problem = name_problem(kind, value)
    if problem is None and not _STRICT_NAME.fullmatch(value):
        problem = f"{kind} '{value}' must start with a letter or digit"
    if problem is not None:
        raise UsageError(problem)


def _source_dir(repo: Path, source: Optional[str]) -> Path:
    experiments = repo / "experiments"
    if source is None:
        return experiments / "TEMPLATE"
    candidates = [Path(source), experiments / source]
    for candidate in candidates:
        if (candidate / "run_bench.sh").is_file():
            return candidate.resolve()
    raise UsageError(
        f"--from {source}: no experiment there (expected a directory with run_bench.sh, "
        "e.g. --from h200/dsv4_h200_dspark)"
    )


def _set_experiment_name(config: Path, name: str) -> None:
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    line = f'EXPERIMENT="{name}"'
    pattern = re.compile(r"^(?:export[ \t]+)?EXPERIMENT=.*$", re.M)
    if pattern.search(text):
        text = pattern.sub(line, text)
    else:
        # after the leading comment block, so the file's own description stays first
        lines = text.split("\n")
        at = 0
        while at < len(lines) and lines[at].startswith("#"):
            at += 1
        lines[at:at] = ["# Name of the experiment (metadata.experiment).", line]
        text = "\n".join(lines)
    config.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def _rewrite_readme(readme: Path, old_rel: str, new_rel: str, old_name: str, name: str) -> None:
    if not readme.exists():
        readme.write_text(f"# {name}\n\nCreated from {old_rel}.\n", encoding="utf-8")
        return
    text = readme.read_text(encoding="utf-8")
    text = text.replace(f"experiments/{old_rel}/", f"experiments/{new_rel}/")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# "):
            title = line[2:]
            rest = title[len(old_name):] if title.startswith(old_name) else f" (from {old_rel})"
            lines[i] = f"# {name}{rest}"
            break
    else:
        lines[:0] = [f"# {name}", ""]
    readme.write_text("\n".join(lines), encoding="utf-8")


def create_experiment(repo: Path, platform_dir: str, name: str, source: Optional[str] = None) -> NewExperiment:
    """Create experiments/<platform_dir>/<name>/ from TEMPLATE (or SOURCE); never overwrites."""
    _check("PLATFORM", platform_dir)
    _check("NAME", name)
    if platform_dir == "TEMPLATE":
        raise UsageError("PLATFORM 'TEMPLATE' is the template itself; use the platform's directory, e.g. h200")
    src = _source_dir(repo, source)
    target = repo / "experiments" / platform_dir / name
    if target.exists() or target.is_symlink():
        raise ConfigError(f"{target} already exists: choose another NAME (nothing was changed)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        shutil.copytree(src, tmp, dirs_exist_ok=True, symlinks=True,
                        ignore=lambda _d, names: [n for n in names if n in _SKIP])
        old_rel = os.path.relpath(src, repo / "experiments") if src.is_relative_to(repo / "experiments") else src.name
        _set_experiment_name(tmp / "config.env", name)
        _rewrite_readme(tmp / "README.md", old_rel, f"{platform_dir}/{name}", src.name, name)
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, target)  # atomic; fails if a concurrent call created the target
        except OSError:
            raise ConfigError(f"{target} already exists: choose another NAME (nothing was changed)") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    platform = platform_for_dir(repo, platform_dir)
    rel = target.relative_to(repo)
    prefix = f"PLATFORM={platform} " if platform else "PLATFORM=<chip> "
    dry_run = f"DRY_RUN=1 {prefix}bash {shlex.quote(str(rel / 'run_bench.sh'))}"
    return NewExperiment(target, src, platform, dry_run)
