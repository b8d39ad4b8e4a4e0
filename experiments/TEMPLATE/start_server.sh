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
# shellcheck source-path=SCRIPTDIR source=../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../scripts/common/adaptive_bench_lib.sh"

#######################################
# Fill SERVER_CMD for the phase's engine.
# Globals:   PHASE_ENGINE MODEL_PATH TP SERVER_HOST PORT SGLANG_EXTRA_ARGS
#            VLLM_EXTRA_ARGS (read); SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration, 2 unsupported engine
#######################################
build_server_cmd() {
  local -a extra=()
  case "${PHASE_ENGINE}" in
    sglang)
      lib::engine_launcher "${PHASE_ENGINE}" || return 1
      read -r -a extra <<<"${SGLANG_EXTRA_ARGS:-}"
      SERVER_CMD=("${LIB_LAUNCHER[@]}" -m sglang.launch_server
        --model-path "${MODEL_PATH}" --tp "${TP}" --trust-remote-code
        --host "${SERVER_HOST}" --port "${PORT}" "${extra[@]}")
      ;;
    vllm*)
      # VLLM_SERVER_DEV_MODE=1 enables POST /reset_prefix_cache.
      lib::engine_launcher "${PHASE_ENGINE}" VLLM_SERVER_DEV_MODE=1 || return 1
      read -r -a extra <<<"${VLLM_EXTRA_ARGS:-}"
      SERVER_CMD=("${LIB_LAUNCHER[@]}" -m vllm.entrypoints.openai.api_server
        --model "${MODEL_PATH}" --tensor-parallel-size "${TP}" --trust-remote-code
        --host "${SERVER_HOST}" --port "${PORT}" "${extra[@]}")
      ;;
    *)
      lib::err "engine ${PHASE_ENGINE} is not supported by this experiment"
      return 2
      ;;
  esac
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
