#!/usr/bin/env bash
#
# SGLang server command on Kunlun P800:
#   docker exec [--env ...] CONTAINER_NAME CONTAINER_PYTHON -m sglang.launch_server ...
#
# Usage: bash start_server.sh [--print-cmd] [PHASE_SPEC]
#   --print-cmd prints the command NUL-separated (run_bench.sh starts and
#   records exactly that command); without it the server is exec'ed in the
#   foreground (DRY_RUN=1 prints it instead). Apply the patches first
#   (scripts/common/apply_patches.sh RUN_DIR) when starting it by hand.
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

#######################################
# Fill SERVER_CMD for the SGLang phase (runs inside the container): the
# common command of bench::sglang_server_cmd plus this experiment's flags.
# Globals:   PHASE_ENGINE MEM_FRACTION_STATIC (read), those of
#            bench::sglang_server_cmd; SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration, 2 unsupported engine
#######################################
build_server_cmd() {
  if [[ "${PHASE_ENGINE}" != "sglang" ]]; then
    lib::err "engine ${PHASE_ENGINE} is not part of this experiment (sglang)"
    return 2
  fi
  bench::sglang_server_cmd --mem-fraction-static "${MEM_FRACTION_STATIC}"
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
