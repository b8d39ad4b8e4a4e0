#!/usr/bin/env bash
#
# Server commands on Kunlun P800, per phase (both inside the container):
#   sglang:   docker exec [--env ...] CONTAINER_NAME CONTAINER_PYTHON -m sglang.launch_server ...
#   vllm-xpu: docker exec --env VLLM_SERVER_DEV_MODE=1 [--env ...] CONTAINER_NAME CONTAINER_PYTHON
#             -m vllm.entrypoints.openai.api_server ...  (vLLM-Kunlun: vLLM with its XPU platform plugin)
#
# Usage: bash start_server.sh [--print-cmd] [PHASE_SPEC]
#   --print-cmd prints the command NUL-separated (run_bench.sh starts and
#   records exactly that command); without it the server is exec'ed in the
#   foreground (DRY_RUN=1 prints it instead). Apply the patches first
#   (scripts/common/apply_patches.sh RUN_DIR) when starting it by hand.
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
# Fill SERVER_CMD for a phase (runs inside the container): the one server
# command of `sskj-results server-cmd` (bench::server_cmd) with the same
# engine settings in each engine's spelling, the memory share included
# (mem_fraction: SGLang's --mem-fraction-static, vLLM-Kunlun's
# --gpu-memory-utilization).
# Globals:   PHASE_ENGINE KV_CACHE_DTYPE MAX_NUM_SEQS CONTEXT_LEN MEM_FRACTION
#            (read), those of bench::server_cmd; SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration or unknown engine
#######################################
build_server_cmd() {
  bench::engine_settings kv_cache_dtype="${KV_CACHE_DTYPE}" max_num_seqs="${MAX_NUM_SEQS}" \
    max_model_len="${CONTEXT_LEN:-}" mem_fraction="${MEM_FRACTION}"
  bench::server_cmd
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
