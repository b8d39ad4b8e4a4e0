#!/usr/bin/env bash
#
# Long-context matrix on 8x H200: concurrency {2,5,10,25} x input
# {65536,131072,262144} x output {256,1024,4096}; SGLang, vLLM and
# vLLM-DSpark phases, then a comparison.
#
# Usage: [PLATFORM=nvidia_h200] [RUN_ID=...] [RESULT_ROOT=...] [DRY_RUN=1]
#        [RESUME=1] bash run_bench.sh
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

main() {
  # the DSpark phase serves the DSpark checkpoint (config.env DSPARK_MODEL_PATH) with its
  # speculative method and own flags (DSPARK_EXTRA_ARGS)
  # shellcheck disable=SC2016  # expanded from the configuration by sskj-results config
  local -a phases=(sglang vllm 'dspark:vllm-dspark:MODEL_PATH=${DSPARK_MODEL_PATH}:SPEC_METHOD=dspark:PHASE_SERVER_ARGS=${DSPARK_EXTRA_ARGS}')
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
