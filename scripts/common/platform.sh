# shellcheck shell=bash source-path=SCRIPTDIR
#
# Platform selection: PLATFORM from the environment, or auto-detection
# (nvidia-smi GPU name, then xpu-smi, else the CPU), then platforms/<name>.env.
#
# Sourcing this file only defines functions (names platform::*); it needs
# lib.sh (sourced here from the same directory when not loaded yet).
#
# Why the .env files are parsed and never `source`d: they are data. `source`
# would run any command or $(...) that slips into one, and PLATFORM comes
# from the environment. lib::load_env_file reads KEY=VALUE lines (quoted
# values, ${VAR} references to variables already set) and executes nothing;
# PLATFORM must be a plain name, so only files in the repo's platforms/
# directory can be selected.

if ! declare -F lib::load_env_file >/dev/null; then
  # shellcheck source=lib.sh
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
fi

#######################################
# Detect the platform of this machine (`sskj-results platform detect`,
# sskj_results/run/platforms.py: nvidia-smi GPU name *H200* -> nvidia_h200,
# *H20* -> nvidia_h20, *RTX PRO 6000* / *6000D* -> nvidia_rtx6000d; working
# xpu-smi -> kunlun_p800; otherwise cpu).
# Outputs:   platform name on stdout; error on stderr for an unknown GPU
# Returns:   0 detected, 1 an NVIDIA GPU of unknown kind
#######################################
platform::detect() {
  lib::results platform detect --repo "$(lib::repo_root)"
}

#######################################
# Check the keys of the loaded platform, read from the environment
# (`sskj-results platform check`): required keys (more with
# RUNTIME=docker), RUNTIME, DEFAULT_PORT, ENGINE; every problem at once.
# Arguments: $1 env file (for messages)
# Outputs:   errors on stderr
# Returns:   0 valid, 1 invalid
#######################################
platform::validate() {
  lib::results platform check "$1"
}

#######################################
# Select and load the platform: PLATFORM (environment or argument) or
# detection; platforms/<PLATFORM>.env read without executing it (the
# identity and container keys are always the file's; other keys can be
# overridden from the environment); default RUNTIME=native and
# ACCEL_SAMPLER by chip; validate. All in one `sskj-results config` call.
# HARDWARE="auto" is passed on as it is: `sskj-results metadata` asks
# nvidia-smi / the CPU for the description.
# Arguments: $1 platform name (optional; overrides PLATFORM)
# Globals:   PLATFORM, REPO_ROOT, SSKJ_ENVS_DIR, SSKJ_MODELS_DIR, the
#            file's keys, ACCEL_SAMPLER (written, exported);
#            PLATFORM_DETECTED (written: 1 when detected, read by preflight)
# Outputs:   progress on stderr
# Returns:   0 loaded, 1 unknown platform or invalid file
#######################################
platform::load() {
  local -a args=(config --repo "${REPO_ROOT:-$(lib::repo_root)}")
  [[ -z "${1:-}" ]] || args+=(--platform "$1")
  [[ -n "${_LIB_ENV_PRESET+x}" ]] || lib::snapshot_env
  lib::results_init || return 1
  lib::read_records env SSKJ_ENV_PRESET="${_LIB_ENV_PRESET}" SSKJ_QUIET_OVERRIDES="${SSKJ_QUIET_OVERRIDES:-}" \
    "${SSKJ_RESULTS_CMD[@]}" "${args[@]}" || return 1
}

#######################################
# Preflight of every phase before anything is started or written: each
# phase's server command (start_server.sh --print-cmd, kept for the run in
# BENCH_TMP_DIR/phase<N>.cmd), then one `sskj-results loop-preflight` call
# for all phases, its `preflight` options from the run's settings
# (sskj_results/run/loopstart.py): the engine commands, client, model, port,
# accelerators, Docker image, disk and each phase's context against the
# grid's shapes (each problem said once); it also finds (and stops) a stale
# engine left by a dead orchestrator on this port or of this experiment.
# With DRY_RUN=1 problems are warnings and nothing is stopped.
# Arguments: $1 experiment directory; $2.. phase specs
# Globals:   PLATFORM_DETECTED MODEL_PATH CLIENT_PYTHON BENCH_TMP_DIR and
#            the run's settings (read)
# Outputs:   one line per problem on stderr
# Returns:   0 ready (or DRY_RUN), 1 a problem
#######################################
platform::preflight() {
  local exp_dir="$1" spec i=0
  shift
  local -a common=("${exp_dir}" --orchestrator "$$")
  if [[ "${PLATFORM_DETECTED:-0}" == "1" ]]; then
    # The platform choice first: a wrong one would build every command wrongly.
    common+=(--detected)
    lib::results loop-preflight "${common[@]}" --platform-only || return 1
  fi
  for spec in "$@"; do
    i=$((i + 1))
    bench::parse_phase_spec "${i}" || return 1
    bench::apply_phase_settings
    # the phase as start_server.sh --print-cmd reads it from the loop (no second configuration load)
    export PHASE_SPEC="${spec}" PHASE_NAME="${BENCH_PHASE_NAME}" PHASE_ENGINE="${BENCH_PHASE_ENGINE}"
    # NNODES > 1: check the command of rank 0 (the head); see multinode.sh.
    if ! NODE_RANK="${NODE_RANK:-0}" DIST_INIT_ADDR="${DIST_INIT_ADDR:-127.0.0.1:${DIST_INIT_PORT:-29500}}" \
      bench::get_server_cmd "${exp_dir}" "${spec}"; then
      bench::restore_phase_settings
      return 1
    fi
    printf '%s\0' "${BENCH_SERVER_CMD[@]}" >"${BENCH_TMP_DIR}/phase${i}.cmd"
    printf '%s\0' "${BENCH_PHASE_ENGINE}" "${MODEL_PATH}" "${CLIENT_PYTHON:-}" "${BENCH_SERVER_CMD[@]}" \
      >"${BENCH_TMP_DIR}/phase${i}.preflight"
    common+=(--phase-file "${BENCH_TMP_DIR}/phase${i}.preflight")
    bench::restore_phase_settings
  done
  if ! lib::results loop-preflight "${common[@]}"; then
    lib::err "preflight failed: nothing was started"
    return 1
  fi
  return 0
}
