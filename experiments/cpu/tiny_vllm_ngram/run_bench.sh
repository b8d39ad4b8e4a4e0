#!/usr/bin/env bash
#
# The embedded default: the whole workflow on a CPU with a real vLLM engine.
# Phase 1 vLLM baseline, phase 2 vLLM with ngram speculative decoding, then
# a comparison. On a fresh machine it first creates the engine and client
# environments and the tiny model (scripts/common/setup_envs.sh cpu).
#
# Usage: [RUN_ID=...] [RESULT_ROOT=...] [DRY_RUN=1] [RESUME=1]
#        [CONCURRENCIES="1 4 16"] [SHAPES="128x64 1024x128"] bash run_bench.sh
# Results: results/<RUN_ID>/phase1_vllm_baseline/, phase2_vllm_ngram/,
#          results/<RUN_ID>/comparison.md
set -euo pipefail

EXPERIMENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PLATFORM="${PLATFORM:-cpu}"
# shellcheck source-path=SCRIPTDIR source=../../../scripts/common/adaptive_bench_lib.sh
source "${EXPERIMENT_DIR}/../../../scripts/common/adaptive_bench_lib.sh"

main() {
  if [[ "${PLATFORM}" != "cpu" ]]; then
    lib::err "this experiment runs on the cpu platform only (PLATFORM=${PLATFORM})"
    return 2
  fi
  if ! lib::is_dry_run; then
    bash "${EXPERIMENT_DIR}/../../../scripts/common/setup_envs.sh" cpu || return 1
  fi
  local -a phases=(vllm_baseline:vllm vllm_ngram:vllm:SPEC_METHOD=ngram)
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
