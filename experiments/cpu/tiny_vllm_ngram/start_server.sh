#!/usr/bin/env bash
#
# Server launch command of each phase: vLLM's CPU build serving the tiny
# model, with ngram speculative decoding when SPEC_METHOD=ngram.
#
# Usage: bash start_server.sh [--print-cmd] [PHASE_SPEC]
#   PHASE_SPEC  as in run_bench.sh, e.g. vllm_baseline:vllm (default: vllm)
#   --print-cmd print the command NUL-separated instead of running it
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

#######################################
# Fill SERVER_CMD for the phase: bench::server_base (launcher with the
# CPU engine's environment, module) plus this experiment's arguments —
# single process, no --tensor-parallel-size or --trust-remote-code.
# Globals:   PHASE_ENGINE MODEL_PATH SERVER_HOST PORT MAX_MODEL_LEN DTYPE
#            KVCACHE_SPACE_GIB SPEC_METHOD SPEC_TOKENS PROMPT_LOOKUP_MAX
#            PROMPT_LOOKUP_MIN (read); SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration, 2 unsupported engine or method
#######################################
build_server_cmd() {
  if [[ "${PHASE_ENGINE}" != "vllm-cpu" ]]; then
    lib::err "engine ${PHASE_ENGINE} is not supported by this experiment (vllm-cpu only)"
    return 2
  fi
  bench::server_base "VLLM_CPU_KVCACHE_SPACE=${KVCACHE_SPACE_GIB}" HF_HUB_OFFLINE=1 || return 1
  SERVER_CMD+=(--model "${MODEL_PATH}" --host "${SERVER_HOST}" --port "${PORT}"
    --enforce-eager --max-model-len "${MAX_MODEL_LEN}" --dtype "${DTYPE}")
  case "${SPEC_METHOD:-}" in
    "") ;;
    ngram)
      local spec
      printf -v spec '{"method":"ngram","num_speculative_tokens":%d,"prompt_lookup_max":%d,"prompt_lookup_min":%d}' \
        "${SPEC_TOKENS}" "${PROMPT_LOOKUP_MAX}" "${PROMPT_LOOKUP_MIN}"
      SERVER_CMD+=(--speculative-config "${spec}")
      ;;
    *)
      lib::err "SPEC_METHOD=${SPEC_METHOD} is not supported here (empty or ngram)"
      return 2
      ;;
  esac
}

main() {
  bench::server_main "${EXPERIMENT_DIR}" build_server_cmd "$@"
}

main "$@"
