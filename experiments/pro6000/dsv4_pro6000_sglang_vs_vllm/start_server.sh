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
export PLATFORM="${PLATFORM:-nvidia_rtx6000d}"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

#######################################
# Fill SERVER_CMD for the phase's engine: the common command of
# bench::sglang_server_cmd / bench::vllm_server_cmd plus this experiment's
# flags.
# Globals:   PHASE_ENGINE KV_CACHE_DTYPE MAX_NUM_SEQS CONTEXT_LEN (read), those of
#            the bench::*_server_cmd functions; SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration, 2 unsupported engine
#######################################
build_server_cmd() {
  bench::engine_flags kv_cache_dtype="${KV_CACHE_DTYPE}" max_num_seqs="${MAX_NUM_SEQS}" \
    max_model_len="${CONTEXT_LEN:-}" || return 1
  case "${PHASE_ENGINE}" in
    sglang) bench::sglang_server_cmd "${BENCH_FLAGS[@]}" ;;
    vllm) bench::vllm_server_cmd "${BENCH_FLAGS[@]}" ;;
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
