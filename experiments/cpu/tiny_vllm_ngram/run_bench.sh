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

export PLATFORM="${PLATFORM:-cpu}"
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
  if [[ "${PLATFORM}" != "cpu" ]]; then
    lib::err "this experiment runs on the cpu platform only (PLATFORM=${PLATFORM})"
    return 2
  fi
  if ! lib::is_dry_run; then
    bash "${REPO_ROOT}/scripts/common/setup_envs.sh" cpu || return 1
  fi
  local -a phases=(vllm_baseline:vllm-cpu vllm_ngram:vllm-cpu:SPEC_METHOD=ngram)
  bench::run_experiment "${EXPERIMENT_DIR}" "${phases[@]}"
}

main "$@"
