#!/usr/bin/env bash
#
# Server launch command of each phase (sglang, vllm) of this experiment.
#
# Usage: bash start_server.sh [--print-cmd] [PHASE_SPEC]
#   --print-cmd prints the command NUL-separated (run_bench.sh starts and
#   records exactly that command); without it the server is exec'ed in the
#   foreground (DRY_RUN=1 prints it instead).
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

#######################################
# Fill SERVER_CMD for the phase's engine.
# Globals:   PHASE_ENGINE MODEL_PATH TP SERVER_HOST PORT KV_CACHE_DTYPE
#            MAX_NUM_SEQS SGLANG_EXTRA_ARGS VLLM_EXTRA_ARGS (read);
#            SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration, 2 unsupported engine
#######################################
build_server_cmd() {
  local -a extra=()
  case "${PHASE_ENGINE}" in
    sglang)
      lib::engine_launcher sglang || return 1
      read -r -a extra <<<"${SGLANG_EXTRA_ARGS:-}"
      SERVER_CMD=("${LIB_LAUNCHER[@]}" -m sglang.launch_server
        --model-path "${MODEL_PATH}" --tp "${TP}" --trust-remote-code
        --host "${SERVER_HOST}" --port "${PORT}" "${extra[@]}")
      ;;
    vllm)
      # VLLM_SERVER_DEV_MODE=1 enables POST /reset_prefix_cache.
      lib::engine_launcher vllm VLLM_SERVER_DEV_MODE=1 || return 1
      read -r -a extra <<<"${VLLM_EXTRA_ARGS:-}"
      SERVER_CMD=("${LIB_LAUNCHER[@]}" -m vllm.entrypoints.openai.api_server
        --model "${MODEL_PATH}" --trust-remote-code --tensor-parallel-size "${TP}"
        --kv-cache-dtype "${KV_CACHE_DTYPE}" --max-num-seqs "${MAX_NUM_SEQS}"
        --host "${SERVER_HOST}" --port "${PORT}" "${extra[@]}")
      ;;
    *)
      lib::err "engine ${PHASE_ENGINE} is not part of this experiment (sglang, vllm)"
      return 2
      ;;
  esac
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
