from __future__ import annotations

import json
from pathlib import Path

import click

from .common import handle_errors


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: one line per problem; json: a machine-readable report.")
@click.option("--quiet", "-q", is_flag=True, help="Print errors only (no warnings, no summary).")
@click.option("--strict", is_flag=True,
              help="Invalid points (a failed validity check, docs/VALIDITY.md) are errors, not warnings: for CI gating.")
@handle_errors
def validate(paths: tuple[Path, ...], fmt: str, quiet: bool, strict: bool = False) -> None:
    """Check results.json files and run directories (PATH: a run directory, a directory of runs, or a results.json).

    Exit 0 when everything is valid (warnings are printed), 1 when anything is invalid.
    Invalid points are warnings; with --strict they are errors.
    """
    from ..analysis.validate import ERROR, graded_points, strict_validity, validate_paths
    from ..ingest.sniff import check_run_path

    for path in paths:
        if path.is_file():
            check_run_path(path)  # a raw client output: say to import it (validate looks inside folders itself)

    reports = validate_paths(paths)
    if strict:
        reports = strict_validity(reports)
    if fmt == "json":
        text = json.dumps({"valid": all(r.valid for r in reports), "files": [r.as_dict() for r in reports]},
                          indent=2, ensure_ascii=False)
        click.echo(text.encode("utf-8", errors="backslashreplace").decode("utf-8"))  # lone surrogates as JSON escapes
    else:
        for report in reports:
            for problem in report.problems:
                if quiet and problem.severity != ERROR:
                    continue
                click.echo(problem.line())
            if not quiet:
                errors = sum(p.severity == ERROR for p in report.problems)
                warnings = len(report.problems) - errors
                verdict = "valid" if report.valid else "invalid"
                counts = f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
                points = _points_line(graded_points(report))
                click.echo(f"{report.file}: {verdict} ({counts}){points}")
    if not all(r.valid for r in reports):
        raise SystemExit(1)


# What each grade word means, beside its count on a file's summary line (docs/VALIDITY.md "Grades").
_MEANING = {"invalid point": "not a measurement of the engine",
            "partly unreliable point": "the metrics named are not believed, the others stand",
            "qualified point": "measured, with a caveat"}


def _points_line(counts: dict[str, int]) -> str:
    """`; 2 invalid points: not a measurement of the engine; 1 qualified point: … (docs/VALIDITY.md; …)` or ""."""
    parts = [f"{n} {word}{'s' * (n != 1)}: {_MEANING[word]}" for word, n in counts.items() if n]
    return "; " + "; ".join(parts) + " (docs/VALIDITY.md; --strict makes them errors)" if parts else ""
