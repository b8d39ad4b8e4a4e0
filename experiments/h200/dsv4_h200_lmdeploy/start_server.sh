#!/usr/bin/env bash
#
# Server launch command of each phase (sglang, lmdeploy) of this experiment.
#
# Usage: bash start_server.sh [--print-cmd] [PHASE_SPEC]
#   --print-cmd prints the command NUL-separated (run_bench.sh starts and
#   records exactly that command); without it the server is exec'ed in the
#   foreground (DRY_RUN=1 prints it instead).
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The repository root: the nearest directory above this one that holds
# scripts/common/ (along the path as called, then the physical one), so a
# copy works at any depth and through symlinks.
for REPO_ROOT in "${EXPERIMENT_DIR}" "$(cd "${EXPERIMENT_DIR}" && pwd -P)" ""; do
  until [[ -z "${REPO_ROOT}" || -f "${REPO_ROOT}/scripts/common/adaptive_bench_lib.sh" ]]; do REPO_ROOT="${REPO_ROOT%/*}"; done
  [[ -n "${REPO_ROOT}" ]] && break
done
if [[ -z "${REPO_ROOT}" ]]; then
  echo "${BASH_SOURCE[0]}: no scripts/common/adaptive_bench_lib.sh in any directory above ${EXPERIMENT_DIR}" >&2
  exit 1
fi
# shellcheck source-path=SCRIPTDIR/../.. source-path=SCRIPTDIR/../../.. source=scripts/common/adaptive_bench_lib.sh
source "${REPO_ROOT}/scripts/common/adaptive_bench_lib.sh"

#######################################
# Fill SERVER_CMD for the phase's engine: the one server command of
# `sskj-results server-cmd` (bench::server_cmd) with this experiment's
# engine settings, each spelled by the engine's row.
# Globals:   PHASE_ENGINE KV_CACHE_DTYPE MAX_NUM_SEQS CONTEXT_LEN (read), those of
#            bench::server_cmd; SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration or unknown engine
#######################################
build_server_cmd() {
  bench::engine_settings kv_cache_dtype="${KV_CACHE_DTYPE}" max_num_seqs="${MAX_NUM_SEQS}" \
    max_model_len="${CONTEXT_LEN:-}"
  bench::server_cmd
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
