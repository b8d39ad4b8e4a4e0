#!/usr/bin/env bash
#
# Server launch command of the vLLM-DSpark phases of this experiment.
#
# Usage: bash start_server.sh [--print-cmd] [PHASE_SPEC]
#   e.g. bash start_server.sh dspark_t3:vllm-dspark:SPEC_TOKENS=3
#   --print-cmd prints the command NUL-separated (run_bench.sh starts and
#   records exactly that command); without it the server is exec'ed in the
#   foreground (DRY_RUN=1 prints it instead).
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

#######################################
# Fill SERVER_CMD for a vLLM-DSpark phase.
# Globals:   PHASE_ENGINE MODEL_PATH SPEC_MODEL_PATH SPEC_METHOD SPEC_TOKENS
#            TP KV_CACHE_DTYPE MAX_MODEL_LEN MAX_NUM_SEQS SERVER_HOST PORT
#            VLLM_EXTRA_ARGS (read); SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration, 2 unsupported engine
#######################################
build_server_cmd() {
  local -a extra=()
  if [[ "${PHASE_ENGINE}" != "vllm-dspark" ]]; then
    lib::err "engine ${PHASE_ENGINE} is not part of this experiment (vllm-dspark)"
    return 2
  fi
  lib::require_env SPEC_MODEL_PATH SPEC_METHOD SPEC_TOKENS || return 1
  # VLLM_SERVER_DEV_MODE=1 enables POST /reset_prefix_cache.
  lib::engine_launcher "${PHASE_ENGINE}" VLLM_SERVER_DEV_MODE=1 || return 1
  read -r -a extra <<<"${VLLM_EXTRA_ARGS:-}"
  SERVER_CMD=("${LIB_LAUNCHER[@]}" -m vllm.entrypoints.openai.api_server
    --model "${MODEL_PATH}" --trust-remote-code --tensor-parallel-size "${TP}"
    --kv-cache-dtype "${KV_CACHE_DTYPE}" --max-model-len "${MAX_MODEL_LEN}"
    --max-num-seqs "${MAX_NUM_SEQS}"
    --spec-method "${SPEC_METHOD}" --spec-model "${SPEC_MODEL_PATH}" --spec-tokens "${SPEC_TOKENS}"
    --host "${SERVER_HOST}" --port "${PORT}" "${extra[@]}")
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
