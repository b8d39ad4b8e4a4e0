#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
#
# Submit experiments to Slurm: one batch job per experiment, then one job
# that waits for all of them (--dependency=afterany) and writes a single
# comparison. See docs/CLUSTER.md.
#
# Usage: bash scripts/common/submit.sh EXPERIMENT_DIR... [--platform P]
#          [--nodes N] [--partition X] [--time T] [--run-id ID]
#          [--results-root DIR] [--dry-run]
#   --platform      platform of every experiment (default: the platform named
#                   like the experiment's parent directory, e.g. h200 ->
#                   nvidia_h200)
#   --nodes N       nodes per job (default: the experiment's NNODES, else 1);
#                   N > 1 starts the engine across the nodes
#   --partition X   partition (default: the platform's SLURM_PARTITION)
#   --time T        time limit per job (default: the platform's SLURM_TIME)
#   --run-id ID     RUN_ID of every job (default: now, YYYYmmdd-HHMMSS); an
#                   existing run with this id is continued (RESUME)
#   --results-root  run directories at DIR/<experiment>/<RUN_ID> and the
#                   comparison at DIR/comparison_<RUN_ID> (default:
#                   <experiment>/results/<RUN_ID>, results/comparison_<RUN_ID>)
#   --dry-run       print the sbatch command lines, submit nothing
# Output: one line per job: job id, experiment, run directory; then the
# comparison job.
set -euo pipefail

_SUBMIT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${_SUBMIT_DIR}/lib.sh"

usage() {
  sed -n '/^# Usage:/,/^# comparison job./p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
}

main() {
  local dry=0 run_id="${RUN_ID:-}" value
  local -a experiments=() plan_opts=()
  while (($# > 0)); do
    case "$1" in
      --dry-run) dry=1 ;;
      --platform | --nodes | --partition | --time | --run-id | --results-root)
        if (($# < 2)); then
          lib::err "$1 needs a value"
          usage
          return 2
        fi
        value="$2"
        if [[ "$1" == "--run-id" ]]; then
          run_id="${value}"
        else
          plan_opts+=("$1" "${value}")
        fi
        shift
        ;;
      -h | --help)
        usage
        return 0
        ;;
      -*)
        lib::err "unknown option $1"
        usage
        return 2
        ;;
      *) experiments+=("$1") ;;
    esac
    shift
  done
  if ((${#experiments[@]} == 0)); then
    lib::err "give at least one experiment directory"
    usage
    return 2
  fi
  if ((dry == 0)) && ! command -v sbatch >/dev/null 2>&1; then
    lib::err "sbatch not found: submit from a Slurm login node (or use --dry-run)"
    return 1
  fi
  run_id="${run_id:-$(date '+%Y%m%d-%H%M%S')}"

  local plan
  plan="$(mktemp)"
  lib::results slurm-plan --run-id "${run_id}" --repo-root "$(lib::repo_root)" \
    "${plan_opts[@]}" "${experiments[@]}" >"${plan}" || {
    rm -f "${plan}"
    return 1
  }
  local -a fields=()
  mapfile -d '' -t fields <"${plan}"
  rm -f "${plan}"

  local i=0 count kind name run_dir job_id status=0
  local -a argv=() job_ids=()
  while ((i < ${#fields[@]})); do
    kind="${fields[i]}"
    if [[ "${kind}" == "job" ]]; then
      name="${fields[i + 1]}" run_dir="${fields[i + 2]}" count="${fields[i + 3]}"
      argv=("${fields[@]:i+4:count}")
      i=$((i + 4 + count))
    else
      name="comparison" run_dir="${fields[i + 1]}" count="${fields[i + 2]}"
      argv=("${fields[@]:i+3:count}")
      i=$((i + 3 + count))
      if ((${#job_ids[@]} > 0)); then
        local deps
        deps="$(IFS=:; printf '%s' "${job_ids[*]}")"
        argv=("${argv[0]}" "--dependency=afterany:${deps}" "${argv[@]:1}")
      elif ((dry == 0)); then
        lib::err "no experiment job was submitted; no comparison job"
        return 1
      fi
    fi
    if ((dry == 1)); then
      lib::print_cmd "${argv[@]}"
      job_ids+=("JOBID_$((${#job_ids[@]} + 1))")
      continue
    fi
    mkdir -p "${run_dir}" || return 1
    if job_id="$("${argv[@]}")"; then
      job_id="${job_id%%;*}"
      job_ids+=("${job_id}")
      printf '%s\t%s\t%s\n' "${job_id}" "${name}" "${run_dir}"
      if [[ "${kind}" == "job" ]]; then
        printf '%s\t%s\t%s\n' "${job_id}" "${name}" "${run_dir}" >>"${run_dir}/slurm_jobs.tsv"
      fi
    else
      lib::err "sbatch failed for ${name}: $(lib::quote_cmd "${argv[@]}")"
      status=1
      [[ "${kind}" == "job" ]] || return 1
    fi
  done
  return "${status}"
}

main "$@"
