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
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

main() {
  local -a phases=(sglang vllm dspark:vllm-dspark)
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
