#!/usr/bin/env bash
#
# DeepSeek-V4-Flash on 8x Kunlun P800 with SGLang in Docker (single phase):
# patches applied in the container, server via docker exec, client on the
# host.
#
# Usage: [PLATFORM=kunlun_p800] [RUN_ID=...] [RESULT_ROOT=...] [DRY_RUN=1]
#        [RESUME=1] [AUTO_START_CONTAINER=1] bash run_bench.sh
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

main() {
  local -a phases=(sglang)
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
