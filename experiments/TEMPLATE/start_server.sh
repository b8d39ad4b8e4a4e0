#!/usr/bin/env bash
#
# Server launch command of each phase of this experiment.
#
# Usage: bash start_server.sh [--print-cmd] [PHASE_SPEC]
#   PHASE_SPEC  as in run_bench.sh, e.g. sglang or vllm (default: the
#               platform's ENGINE)
#   --print-cmd print the command NUL-separated instead of running it
#               (run_bench.sh uses this, then starts and records exactly it)
# Run without --print-cmd it execs the server in the foreground (DRY_RUN=1
# prints the command). Configuration: platforms/<chip>.env + config.env +
# environment, loaded by scripts/common/adaptive_bench_lib.sh.
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
# Fill SERVER_CMD for the phase's engine: bench::server_cmd prints the one
# server command of `sskj-results server-cmd` (launcher, model, TP, the
# settings given to bench::engine_settings in each engine's spelling, this
# experiment's own flags given as its arguments, host, port, the engine's
# *_EXTRA_ARGS), e.g.
#   bench::engine_settings max_model_len="${CONTEXT_LEN:-}" kv_cache_dtype="${KV_CACHE_DTYPE:-}"
# Globals:   PHASE_ENGINE (read), those of bench::server_cmd; SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration or unknown engine
#######################################
build_server_cmd() {
  bench::server_cmd
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
