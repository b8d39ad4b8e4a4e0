#!/usr/bin/env bash
#
# DeepSeek-V4-Flash with DSpark speculative decoding (vLLM-DSpark) on 8x
# H200; the spec-tokens comparison as phases (5, 3, 1 draft tokens).
#
# Usage: [PLATFORM=nvidia_h200] [RUN_ID=...] [RESULT_ROOT=...] [DRY_RUN=1]
#        [RESUME=1] bash run_bench.sh
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

main() {
  local -a phases=(
    dspark_t5:vllm-dspark:SPEC_TOKENS=5
    dspark_t3:vllm-dspark:SPEC_TOKENS=3
    dspark_t1:vllm-dspark:SPEC_TOKENS=1
  )
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
