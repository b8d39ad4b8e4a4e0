#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
#
# The batch script of the Slurm jobs that scripts/common/submit.sh submits.
#
# Usage (by sbatch, see sskj_results/run/slurm.py):
#   slurm_job.sh run EXPERIMENT_DIR RUN_ID RUN_DIR PLATFORM NNODES
#     Run the experiment with RESUME=1 into RUN_DIR: a first start finds
#     nothing to resume; a requeued or restarted job continues at the next
#     missing scenario. NNODES > 1: the engine spans the job's nodes
#     (scripts/common/multinode.sh). SIGTERM (scancel, preemption, the time
#     limit's --signal) stops the engine on every node and keeps what was
#     measured.
#   slurm_job.sh compare OUT_DIR RUN_DIR...
#     Validate every run and write one comparison of all of them to OUT_DIR
#     (the job submitted with --dependency=afterany on the experiment jobs).
set -euo pipefail

_JOB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Under sbatch the script runs from a spool copy: find the repository from
# the experiment (run) or from the working directory (--chdir=<repo>).
if [[ ! -f "${_JOB_DIR}/lib.sh" ]]; then
  _JOB_DIR="$(pwd)/scripts/common"
fi
# shellcheck source=lib.sh
source "${_JOB_DIR}/lib.sh"

#######################################
# Run one experiment inside the allocation.
# Arguments: $1 experiment dir; $2 run id; $3 run dir; $4 platform; $5 nodes
# Returns:   the exit status of run_bench.sh (does not return: exec)
#######################################
job::run() {
  if (($# != 5)); then
    lib::err "usage: slurm_job.sh run EXPERIMENT_DIR RUN_ID RUN_DIR PLATFORM NNODES"
    return 2
  fi
  local exp_dir="$1"
  export RUN_ID="$2" RESULT_ROOT="$3" PLATFORM="$4" NNODES="$5" RESUME=1
  mkdir -p "${RESULT_ROOT}" || return 1
  lib::info "job ${SLURM_JOB_ID:-?} (restart ${SLURM_RESTART_COUNT:-0}) on ${SLURM_JOB_NODELIST:-$(hostname)}: ${exp_dir} -> ${RESULT_ROOT}"
  exec bash "${exp_dir}/run_bench.sh"
}

#######################################
# Validate every run and compare all of them (`sskj-results slurm-compare`).
# Arguments: $1 output dir; $2.. run dirs (each holds results.json or
#            phase*/results.json)
# Outputs:   progress on stderr
# Returns:   0 all valid and compared, 1 otherwise, 2 misuse
#######################################
job::compare() {
  if (($# < 2)); then
    lib::err "usage: slurm_job.sh compare OUT_DIR RUN_DIR..."
    return 2
  fi
  mkdir -p "$1" || return 1
  lib::results slurm-compare "$@" >&2
}

main() {
  local mode="${1:-}"
  shift || true
  case "${mode}" in
    run) job::run "$@" ;;
    compare) job::compare "$@" ;;
    *)
      lib::err "usage: slurm_job.sh run|compare ..."
      return 2
      ;;
  esac
}

main "$@"
