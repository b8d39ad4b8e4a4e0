#!/usr/bin/env bash
#
# DeepSeek-V4-Flash on 8x H20: SGLang vs vLLM over the 2026-07-07 grid
# (scenarios.tsv). Phase 1 SGLang, phase 2 vLLM, then sskj-results compare.
#
# Usage: [PLATFORM=nvidia_h20] [RUN_ID=...] [RESULT_ROOT=...] [DRY_RUN=1]
#        [RESUME=1] bash run_bench.sh
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PLATFORM="${PLATFORM:-nvidia_h20}"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

main() {
  local -a phases=(sglang vllm)
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
