#!/usr/bin/env bash
#
# Server launch command of each phase (sglang, vllm, dspark) of the
# long-context matrix.
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
# Fill SERVER_CMD for the phase's engine: the common command of
# bench::sglang_server_cmd / bench::vllm_server_cmd plus this experiment's
# flags (DSpark: the speculative-decoding ones too).
# Globals:   PHASE_ENGINE CONTEXT_LEN KV_CACHE_DTYPE MAX_NUM_SEQS
#            SPEC_TOKENS SPEC_MODEL_PATH DSPARK_EXTRA_ARGS (read), those of the
#            bench::*_server_cmd functions; SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration, 2 unsupported engine
#######################################
build_server_cmd() {
  local -a settings=(kv_cache_dtype="${KV_CACHE_DTYPE}" max_model_len="${CONTEXT_LEN}" max_num_seqs="${MAX_NUM_SEQS}")
  local -a extra=()
  if [[ "${PHASE_ENGINE}" == "vllm-dspark" ]]; then
    settings+=(spec_method=dspark spec_model="${SPEC_MODEL_PATH:-}" spec_tokens="${SPEC_TOKENS}")
    read -r -a extra <<<"${DSPARK_EXTRA_ARGS:-}"
  fi
  bench::engine_flags "${settings[@]}" || return 1
  case "${PHASE_ENGINE}" in
    sglang) bench::sglang_server_cmd "${BENCH_FLAGS[@]}" ;;
    vllm | vllm-dspark) bench::vllm_server_cmd "${BENCH_FLAGS[@]}" "${extra[@]}" ;;
    *)
      lib::err "engine ${PHASE_ENGINE} is not part of this experiment (sglang, vllm, vllm-dspark)"
      return 2
      ;;
  esac
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
