#!/usr/bin/env bash
#
# Create a new experiment: experiments/<PLATFORM>/<NAME>/ from
# experiments/TEMPLATE (or from an existing experiment with --from), with its
# name set in config.env and README.md; never overwrites; prints the dry run
# to try. The work is done by `sskj-results new-experiment`.
#
# Usage: bash scripts/common/new_experiment.sh PLATFORM NAME [--from EXPERIMENT]
#   PLATFORM    directory under experiments/ (cpu, h20, h200, p800, pro6000, or a new one)
#   NAME        the experiment's name ([A-Za-z0-9][A-Za-z0-9._-]*)
#   --from EXPERIMENT  copy this one instead, e.g. h200/dsv4_h200_dspark
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

main() {
  if (($# < 2)); then
    lib::err "usage: new_experiment.sh PLATFORM NAME [--from EXPERIMENT]"
    return 2
  fi
  lib::results new-experiment --repo "$(lib::repo_root)" "$@"
}

main "$@"
