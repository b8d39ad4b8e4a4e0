#!/usr/bin/env bash
#
# Fixed-scenario SGLang vs vLLM benchmark (template): one phase per engine,
# each in results/<RUN_ID>/phase<N>_<engine>/, then a comparison.
#
# Usage: [PLATFORM=...] [RUN_ID=...] [RESULT_ROOT=...] [DRY_RUN=1] [RESUME=1]
#        bash run_bench.sh
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../scripts/common/adaptive_bench_lib.sh"

main() {
  local -a phases=(sglang vllm)
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
