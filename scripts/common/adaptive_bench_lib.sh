# shellcheck shell=bash source-path=SCRIPTDIR
#
# The run loop of every experiment: phases, scenario grid, server lifecycle,
# out-of-memory handling, resume, SLO search, dry run, signal handling.
#
# Sourcing this file only defines functions (names bench::*, private
# _bench::*); it sources lib.sh and platform.sh from the same directory.
#
# An experiment's run_bench.sh calls one function:
#
#   bench::run_experiment "$EXPERIMENT_DIR" sglang vllm
#
# Each argument after the directory is a phase spec
#   NAME[:ENGINE][:KEY=VALUE]...
# NAME names the phase (and its run directory phase<N>_<NAME>/ when there is
# more than one phase); ENGINE defaults to NAME; KEY=VALUE pairs are
# exported while the phase runs (e.g. dspark_t3:vllm-dspark:SPEC_TOKENS=3).
# The experiment's start_server.sh builds the server command of a phase (see
# bench::server_main; bench::sglang_server_cmd and bench::vllm_server_cmd
# hold the common part); the grid comes from scenarios.tsv or config.env.

_BENCH_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! declare -F lib::load_env_file >/dev/null; then
  # shellcheck source=lib.sh
  source "${_BENCH_LIB_DIR}/lib.sh"
fi
if ! declare -F platform::load >/dev/null; then
  # shellcheck source=platform.sh
  source "${_BENCH_LIB_DIR}/platform.sh"
fi
if ! declare -F multinode::server_cmd >/dev/null; then
  # shellcheck source=multinode.sh
  source "${_BENCH_LIB_DIR}/multinode.sh"
fi

#######################################
# Load platform and experiment configuration and set run-wide defaults.
# Order of precedence: environment > config.env > platforms/<chip>.env.
# Arguments: $1 experiment directory
# Globals:   many configuration variables (written, exported)
# Returns:   0 ok, 1 invalid configuration
#######################################
bench::load_config() {
  local exp_dir="$1"
  export EXPERIMENT_DIR="${exp_dir}"
  lib::snapshot_env
  platform::load "${PLATFORM:-}" || return 1
  if [[ -f "${exp_dir}/config.env" ]]; then
    lib::load_env_file "${exp_dir}/config.env" || return 1
  fi
  export EXPERIMENT="${EXPERIMENT:-$(basename "${exp_dir}")}"
  # PORT SERVER_HOST HEALTH_TIMEOUT_S STOP_GRACE_S WARMUP_REQUESTS
  # PROMPTS_PER_CONCURRENCY MIN_PROMPTS CLIENT OOM_PATTERN TP, defaulted and
  # checked by `sskj-results run-settings` (sskj_results/run/launch.py).
  lib::export_records "sskj-results run-settings" "${SSKJ_RESULTS_CMD[@]}" run-settings
}

#######################################
# Split a phase spec NAME[:ENGINE][:KEY=VALUE]... (`sskj-results phase`).
# Arguments: $1 spec
# Globals:   BENCH_PHASE_NAME, BENCH_PHASE_ENGINE (written),
#            BENCH_PHASE_SETS (written, array of KEY=VALUE)
# Returns:   0 ok, 2 malformed spec or unknown engine
#######################################
bench::parse_phase_spec() {
  local rc=0
  local -a fields=()
  lib::results_init || return 2
  mapfile -d '' -t fields < <("${SSKJ_RESULTS_CMD[@]}" phase "$1")
  wait "$!" || rc=$?
  ((rc == 0 && ${#fields[@]} >= 2)) || return 2
  BENCH_PHASE_NAME="${fields[0]}"
  BENCH_PHASE_ENGINE="${fields[1]}"
  BENCH_PHASE_SETS=("${fields[@]:2}")
}

#######################################
# Export a phase's settings, remembering previous values for
# bench::restore_phase_settings.
# Globals:   BENCH_PHASE_SETS (read); _BENCH_SAVED (written)
# Returns:   0
#######################################
bench::apply_phase_settings() {
  local kv key
  _BENCH_SAVED=()
  for kv in "${BENCH_PHASE_SETS[@]}"; do
    key="${kv%%=*}"
    if [[ -n "${!key+x}" ]]; then
      _BENCH_SAVED+=("${key}=${!key}")
    else
      _BENCH_SAVED+=("${key}")
    fi
    export "${kv?}"
  done
  return 0
}

#######################################
# Undo bench::apply_phase_settings.
# Globals:   _BENCH_SAVED (read, cleared)
# Returns:   0
#######################################
bench::restore_phase_settings() {
  local item
  for item in "${_BENCH_SAVED[@]}"; do
    if [[ "${item}" == *=* ]]; then
      export "${item?}"
    else
      unset "${item}"
    fi
  done
  _BENCH_SAVED=()
  return 0
}

#######################################
# Fill BENCH_SERVER_CMD by asking the experiment's start_server.sh for the
# command of a phase (NUL-separated, see bench::server_main).
# Arguments: $1 experiment directory; $2 phase spec
# Globals:   BENCH_SERVER_CMD (written, array)
# Returns:   0 ok, 1 start_server.sh failed
#######################################
bench::get_server_cmd() {
  local exp_dir="$1" spec="$2" tmp rc=0
  tmp="$(mktemp)"
  SSKJ_QUIET_OVERRIDES=1 bash "${exp_dir}/start_server.sh" --print-cmd "${spec}" >"${tmp}" || rc=$?
  if ((rc != 0)); then
    rm -f "${tmp}"
    lib::err "${exp_dir}/start_server.sh --print-cmd ${spec} failed (exit ${rc})"
    return 1
  fi
  mapfile -d '' -t BENCH_SERVER_CMD <"${tmp}"
  rm -f "${tmp}"
  if ((${#BENCH_SERVER_CMD[@]} == 0)); then
    lib::err "${exp_dir}/start_server.sh printed no command for phase ${spec}"
    return 1
  fi
  return 0
}

#######################################
# Entry point of start_server.sh: load the configuration, build the
# command of one phase with the experiment's builder function, then print it
# NUL-separated (--print-cmd, used by the run loop), print it quoted
# (DRY_RUN=1), or exec it (the server runs in the foreground).
# Arguments: $1 experiment directory; $2 builder function (fills SERVER_CMD
#            from PHASE_ENGINE and the configuration); $3.. [--print-cmd]
#            [PHASE_SPEC] (default: the platform's ENGINE)
# Globals:   PHASE_NAME PHASE_ENGINE PHASE_SPEC (written, exported);
#            SERVER_CMD (written by the builder)
# Returns:   1 failure, 2 misuse; does not return after exec
#######################################
bench::server_main() {
  local exp_dir="$1" builder="$2" print=0
  shift 2
  if [[ "${1:-}" == "--print-cmd" ]]; then
    print=1
    shift
  fi
  if (($# > 1)); then
    lib::err "usage: start_server.sh [--print-cmd] [PHASE_SPEC]"
    return 2
  fi
  bench::load_config "${exp_dir}" || return 1
  local spec="${1:-${ENGINE}}"
  bench::parse_phase_spec "${spec}" || return 2
  bench::apply_phase_settings
  export PHASE_SPEC="${spec}" PHASE_NAME="${BENCH_PHASE_NAME}" PHASE_ENGINE="${BENCH_PHASE_ENGINE}"
  SERVER_CMD=()
  "${builder}" || return 1
  if ((${#SERVER_CMD[@]} == 0)); then
    lib::err "${builder} built no command for engine ${PHASE_ENGINE}"
    return 1
  fi
  if ((print)); then
    printf '%s\0' "${SERVER_CMD[@]}"
    return 0
  fi
  if lib::is_dry_run; then
    lib::print_cmd "${SERVER_CMD[@]}"
    return 0
  fi
  lib::info "exec $(lib::quote_cmd "${SERVER_CMD[@]}")"
  exec "${SERVER_CMD[@]}"
}

#######################################
# Fill BENCH_FLAGS with the phase engine's own flags for engine settings
# given in the workflow's terms (tp, kv_cache_dtype, max_num_seqs,
# max_model_len, spec_method, spec_tokens, spec_model), spelled by the
# engine table (`sskj-results engine ENGINE --flags`): one set of experiment
# variables gives every engine the equivalent settings. An empty value gives
# no flag.
# Arguments: KEY=VALUE...
# Globals:   PHASE_ENGINE (read); BENCH_FLAGS (written, array)
# Returns:   0 ok, 1 unknown engine or setting
#######################################
bench::engine_flags() {
  local kv rc=0
  local -a args=()
  for kv in "$@"; do
    args+=(--flags "${kv}")
  done
  lib::results_init || return 1
  # shellcheck disable=SC2034  # read by the experiment's start_server.sh
  mapfile -d '' -t BENCH_FLAGS < <("${SSKJ_RESULTS_CMD[@]}" engine "${PHASE_ENGINE}" "${args[@]}")
  wait "$!" || rc=$?
  return "$((rc != 0))"
}

#######################################
# bench::sglang_server_cmd / bench::vllm_server_cmd: fill SERVER_CMD with the
# phase's server command, bench::vllm_server_base with its start only
# (launcher with the engine table's server environment, -m module); spelled
# by `sskj-results server-cmd` (sskj_results/run/launch.py documents each: model,
# TP, FLAG..., host, port, the multi-node flags of this rank, *_EXTRA_ARGS).
# Arguments: FLAG... the experiment's own flags (vllm_server_base: KEY=VALUE...
#            more server environment); may be none
# Globals:   PHASE_ENGINE and the run's settings (read, from the environment);
#            SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration or unknown engine
#######################################
# shellcheck disable=SC2120  # FLAG... is optional
bench::sglang_server_cmd() {
  _bench::server_cmd sglang "$@"
}
# shellcheck disable=SC2120  # FLAG... is optional
bench::vllm_server_cmd() {
  _bench::server_cmd vllm "$@"
}
# shellcheck disable=SC2120  # FLAG... is optional
bench::vllm_server_base() {
  _bench::server_cmd base "$@"
}

#######################################
# Fill SERVER_CMD from `sskj-results server-cmd PHASE_ENGINE --kind KIND`.
# Arguments: $1 kind (sglang, vllm, base); $2.. its words
# Returns:   0 ok, 1 failed (sskj-results printed why)
#######################################
_bench::server_cmd() {
  local kind="$1" rc=0
  shift
  lib::results_init || return 1
  mapfile -d '' -t SERVER_CMD < <("${SSKJ_RESULTS_CMD[@]}" server-cmd "${PHASE_ENGINE}" --kind "${kind}" -- "$@")
  wait "$!" || rc=$?
  return "$((rc != 0))"
}

#######################################
# Make sure the platform's container runs (docker platforms): start a
# stopped one; create a missing one only with AUTO_START_CONTAINER=1.
# Globals:   CONTAINER_NAME DOCKER_IMAGE DOCKER_RUN_ARGS AUTO_START_CONTAINER
# Returns:   0 running, 1 not running
#######################################
bench::ensure_container() {
  local state
  local -a run_args=()
  read -r -a run_args <<<"${DOCKER_RUN_ARGS:-}"
  local -a create=(docker run -d --name "${CONTAINER_NAME}" "${run_args[@]}" "${DOCKER_IMAGE}" sleep infinity)
  state="$(docker inspect -f '{{.State.Running}}' "${CONTAINER_NAME}" 2>/dev/null)" || state="missing"
  case "${state}" in
    true) return 0 ;;
    false)
      lib::info "starting stopped container ${CONTAINER_NAME}"
      docker start "${CONTAINER_NAME}" >/dev/null || return 1
      ;;
    *)
      if [[ "${AUTO_START_CONTAINER:-0}" != "1" ]]; then
        lib::err "container ${CONTAINER_NAME} does not exist; create it (or set AUTO_START_CONTAINER=1): $(lib::quote_cmd "${create[@]}")"
        return 1
      fi
      lib::info "creating container: $(lib::quote_cmd "${create[@]}")"
      "${create[@]}" >/dev/null || return 1
      ;;
  esac
  return 0
}

#######################################
# Start the phase's server and wait until healthy (port must be free).
# Globals:   BENCH_SERVER_CMD BENCH_RUN_DIR PORT SERVER_HOST HEALTH_TIMEOUT_S
#            RUNTIME CONTAINER_NAME PHASE_NAME (read); LIB_SERVER_* (written)
# Returns:   0 healthy, 1 failure (server stopped again)
#######################################
bench::start_phase_server() {
  if ! lib::wait_port_free "${PORT}" "${PORT_FREE_TIMEOUT_S:-30}"; then
    lib::err "port ${PORT} is in use: stop whatever listens there or set PORT"
    return 1
  fi
  # shellcheck disable=SC2034  # read by lib::stop_server
  LIB_SERVER_CONTAINER=""
  # shellcheck disable=SC2034  # read by lib::stop_server
  LIB_SERVER_TAG=""
  if [[ "${RUNTIME:-native}" == "docker" ]]; then
    # shellcheck disable=SC2034  # read by lib::stop_server
    LIB_SERVER_CONTAINER="${CONTAINER_NAME}"
    # shellcheck disable=SC2034  # read by lib::stop_server
    LIB_SERVER_TAG="sskj-${PORT}"
  fi
  # The mark lets a later run find this engine if this orchestrator dies
  # (sskj-results preflight); engine.pid says the same for people.
  local stat
  stat="$(</proc/$$/stat)"
  local -a fields
  read -r -a fields <<<"${stat##*) }"
  local mark="port=${PORT};orch=$$;orch_start=${fields[19]};exp=${BENCH_EXPERIMENT_DIR};run=${BENCH_RUN_DIR}"
  mark+=";container=${LIB_SERVER_CONTAINER};tag=${LIB_SERVER_TAG}"
  SSKJ_ENGINE_MARK="${mark}" lib::start_server "${PHASE_NAME}" "${BENCH_RUN_DIR}/logs" "${BENCH_SERVER_CMD[@]}" || return 1
  printf 'pid=%s\nport=%s\norchestrator=%s\ncontainer=%s\ntag=%s\nlog=%s\nstop=kill -TERM -- -%s\n' \
    "${LIB_SERVER_PID}" "${PORT}" "$$" "${LIB_SERVER_CONTAINER}" "${LIB_SERVER_TAG}" "${LIB_SERVER_LOG}" \
    "${LIB_SERVER_PID}" >"${BENCH_RUN_DIR}/engine.pid"
  # shellcheck disable=SC2153  # LIB_SERVER_LOG is set by lib::start_server
  if ! lib::wait_for_health "http://${SERVER_HOST}:${PORT}" "${LIB_SERVER_PID}" "${HEALTH_TIMEOUT_S}" "${LIB_SERVER_LOG}"; then
    lib::stop_server
    return 1
  fi
  BENCH_SERVER_UP=1
  return 0
}

#######################################
# Stop the phase's server (if up) and wait for its port to be released.
# Globals:   BENCH_SERVER_UP (written)
# Returns:   0
#######################################
bench::stop_phase_server() {
  lib::stop_server
  rm -f "${BENCH_RUN_DIR}/engine.pid"
  BENCH_SERVER_UP=0
  lib::wait_port_free "${PORT}" "${PORT_FREE_TIMEOUT_S:-30}" ||
    lib::warn "port ${PORT} still in use after the server stopped"
  return 0
}

#######################################
# Make sure a healthy server runs before a scenario (restart after a crash);
# nothing under DRY_RUN (the phase printed the server command).
# Returns:   0 ready, 1 could not start
#######################################
bench::ensure_server() {
  lib::is_dry_run && return 0
  if ((${BENCH_SERVER_UP:-0} == 1)) && lib::pid_alive "${LIB_SERVER_PID:-}"; then
    return 0
  fi
  if ((${BENCH_SERVER_UP:-0} == 1)); then
    lib::warn "server process is gone; restarting"
    bench::stop_phase_server
  fi
  bench::start_phase_server
}

#######################################
# Run a child command (its output appended to a log headed by the quoted
# command), or print it under DRY_RUN.
# Arguments: $1 log file; $2.. command
# Returns:   the command's status (0 under DRY_RUN)
#######################################
bench::step() {
  local log="$1"
  shift
  if lib::is_dry_run; then
    lib::print_cmd "$@"
    return 0
  fi
  printf '# %s\n' "$(lib::quote_cmd "$@")" >>"${log}"
  lib::run_child "${log}" "$@"
}

#######################################
# Run (or, under DRY_RUN, print) one scenario: warmup, prefix-cache reset,
# /metrics before, accelerator sampling, the bench client under
# `sskj-results run-client` (which watches the server, stops the client when
# the server dies and records a server failure in skipped_after_oom.csv),
# /metrics after, `sskj-results parse`.
# Arguments: $1 c; $2 input; $3 output; $4 prompts; $5 stem; $6 raw file name
# Globals:   BENCH_RUN_DIR PHASE_ENGINE LIB_SERVER_* (read)
# Outputs:   the commands on stdout under DRY_RUN
# Returns:   0 ok; 1 client failed while the server is fine (not recorded,
#            rerun on resume); 3 server died or reported out-of-memory
#######################################
bench::run_scenario() {
  local c="$1" in="$2" out="$3" n="$4" stem="$5" url="http://${SERVER_HOST}:${PORT}" rc=0
  local run_dir="${BENCH_RUN_DIR}" raw="${BENCH_RUN_DIR}/raw_outputs/$6"
  local client_log="${run_dir}/logs/client_${stem}.log" metrics="${run_dir}/server_metrics/${stem}"
  lib::engine "${PHASE_ENGINE}" || return 1
  if lib::is_dry_run; then
    printf '# scenario c%s_i%s_o%s (%s prompts)\n' "${c}" "${in}" "${out}" "${n}"
  else
    rm -f "${raw}"
    lib::info "scenario c${c}_i${in}_o${out}: ${n} prompts -> ${raw#"${BENCH_RESULT_ROOT}"/}"
  fi
  local offset=0
  [[ ! -f "${LIB_SERVER_LOG:-}" ]] || offset="$(stat -c %s "${LIB_SERVER_LOG}")"
  if ((WARMUP_REQUESTS > 0)); then
    lib::build_warmup_cmd "${in}" "${WARMUP_REQUESTS}"
    bench::step "${client_log}" "${LIB_WARMUP_CMD[@]}" || {
      lib::warn "warmup failed (see ${client_log}):"
      tail -n 5 "${client_log}" >&2 || true
    }
  fi
  lib::reset_prefix_cache "${PHASE_ENGINE}" "${url}" || true
  ((LIB_ENGINE_METRICS)) && { lib::save_metrics "${url}" "${metrics}.before.prom" || true; }
  lib::build_client_cmd "${raw}" "${c}" "${in}" "${out}" "${n}" || return 1
  local -a cmd=("${SSKJ_RESULTS_CMD[@]}" run-client "${run_dir}" --stem "${stem}" --concurrency "${c}"
    --input-len "${in}" --output-len "${out}" --server-pid "${LIB_SERVER_PID:-SERVER_PID}"
    --server-log "${LIB_SERVER_LOG:-SERVER_LOG}" --log-offset "${offset}" --oom-pattern "${OOM_PATTERN}"
    --client-log "${client_log}" --raw "${raw}" -- "${LIB_CLIENT_CMD[@]}")
  lib::is_dry_run || lib::start_accel_sampler "${run_dir}/gpu_logs/${stem}"
  bench::step "${client_log}" "${cmd[@]}" || rc=$?
  lib::stop_accel_sampler
  if ((rc == 3)); then
    tail -n 1 "${client_log}" >&2 2>/dev/null || true
    lib::err "server failure during c${c}_i${in}_o${out}; log ${LIB_SERVER_LOG}"
  else
    ((LIB_ENGINE_METRICS)) && { lib::save_metrics "${url}" "${metrics}.after.prom" || true; }
    if ((rc != 0)); then
      lib::err "bench client failed for c${c}_i${in}_o${out} (exit ${rc}); last lines of ${client_log}:"
      tail -n 15 "${client_log}" >&2 || true
    fi
  fi
  lib::is_dry_run || lib::results parse "${run_dir}" ${SLO_TIER:+--slo-tier "${SLO_TIER}"} >&2 ||
    lib::warn "sskj-results parse ${run_dir} failed; rerun it by hand"
  return "${rc}"
}

#######################################
# The run loop of a phase: ask `sskj-results next` for the next scenario
# (grid order, resume, skips after a failure, or the SLO search with
# SLO_SEARCH=1: all decided there), make sure the server is up, run it,
# repeat until `next` prints nothing. After a server failure the server is
# stopped (and restarted for the next scenario).
# Globals:   BENCH_RUN_DIR BENCH_EXPERIMENT_DIR RUN_ID BENCH_SESSION and
#            the grid settings (read); BENCH_STATUS (written)
# Outputs:   commands on stdout with DRY_RUN=1
# Returns:   0 done (failures recorded), 1 server could not (re)start or
#            `next` failed
#######################################
bench::run_grid() {
  local line c in out n stem raw rc
  local -a ask=(next "${BENCH_RUN_DIR}" --chip "${CHIP}" --engine "${PHASE_ENGINE}" --run-id "${RUN_ID}"
    --client "${CLIENT}" --scenarios "${SCENARIOS_FILE:-${BENCH_EXPERIMENT_DIR}/scenarios.tsv}"
    --concurrencies "${CONCURRENCIES:-}" --shapes "${SHAPES:-}"
    --prompts-per-concurrency "${PROMPTS_PER_CONCURRENCY}" --min-prompts "${MIN_PROMPTS}"
    --session "${BENCH_RUN_DIR}/logs/plan_${BENCH_SESSION}.txt")
  [[ -n "${NUM_PROMPTS:-}" ]] && ask+=(--num-prompts "${NUM_PROMPTS}")
  if [[ "${SLO_SEARCH:-0}" == "1" ]]; then
    ask+=(--slo-search --slo-max-steps "${SLO_MAX_STEPS:-32}")
    [[ -n "${SLO_TIER:-}" ]] && ask+=(--slo-tier "${SLO_TIER}")
    [[ -n "${SLO_MIN_CONCURRENCY:-}" ]] && ask+=(--slo-min-concurrency "${SLO_MIN_CONCURRENCY}")
    [[ -n "${SLO_MAX_CONCURRENCY:-}" ]] && ask+=(--slo-max-concurrency "${SLO_MAX_CONCURRENCY}")
  fi
  while :; do
    line="$(lib::results "${ask[@]}")" || {
      lib::err "sskj-results next ${BENCH_RUN_DIR} failed"
      return 1
    }
    [[ -n "${line}" ]] || return 0
    read -r c in out n stem raw <<<"${line}"
    bench::ensure_server || return 1
    rc=0
    bench::run_scenario "${c}" "${in}" "${out}" "${n}" "${stem}" "${raw}" || rc=$?
    case "${rc}" in
      0) ;;
      3) bench::stop_phase_server ;;
      *) BENCH_STATUS=1 ;;
    esac
  done
}

#######################################
# The config keys recorded in results.json config: port, client settings,
# the startup variables a platform allow-list let through (startup_vars),
# and the variables named in RECORD_CONFIG (read from the environment by
# `sskj-results metadata --record-env`; lower-cased keys; secret names are
# recorded as <redacted> by sskj-results).
# Globals:   BENCH_CONFIG_ARGS (written, array of sskj-results options)
# Returns:   0
#######################################
bench::collect_config_args() {
  BENCH_CONFIG_ARGS=(
    --config "port=${PORT}" --config "client_backend=${CLIENT_BACKEND}"
    --config "dataset_name=${DATASET_NAME:-$([[ "${CLIENT}" == vllm ]] && echo random || echo random-ids)}"
    --config "warmup_requests=${WARMUP_REQUESTS}" --record-env "${RECORD_CONFIG:-}"
  )
  if [[ -n "${SSKJ_STARTUP_VARS:-}" ]]; then
    BENCH_CONFIG_ARGS+=(--config "startup_vars=${SSKJ_STARTUP_VARS}")
  fi
}

#######################################
# Run one phase in its run directory: server command, metadata, patches,
# server, grid (or SLO search), report, validate.
# Arguments: $1 phase index (1-based); $2 phase spec
# Globals:   BENCH_* (read/written), configuration (read)
# Outputs:   commands on stdout with DRY_RUN=1
# Returns:   0 ok, 1 failure
#######################################
bench::run_phase() {
  local index="$1" spec="$2"
  bench::parse_phase_spec "${spec}" || return 1
  bench::apply_phase_settings
  export PHASE_SPEC="${spec}" PHASE_NAME="${BENCH_PHASE_NAME}" PHASE_ENGINE="${BENCH_PHASE_ENGINE}" PHASE_INDEX="${index}"
  local family
  family="$(lib::engine_family "${PHASE_ENGINE}")"
  local saved_backend="${CLIENT_BACKEND:-}"
  if [[ -z "${CLIENT_BACKEND:-}" ]]; then
    export CLIENT_BACKEND="${family}"
  fi
  if ((BENCH_PHASE_COUNT > 1)); then
    BENCH_RUN_DIR="${BENCH_RESULT_ROOT}/phase${index}_${PHASE_NAME}"
  else
    BENCH_RUN_DIR="${BENCH_RESULT_ROOT}"
  fi
  mkdir -p "${BENCH_RUN_DIR}"/{raw_outputs,logs,gpu_logs,server_metrics} || return 1
  lib::info "phase ${index}/${BENCH_PHASE_COUNT} ${PHASE_NAME} (engine ${PHASE_ENGINE}) -> ${BENCH_RUN_DIR}"
  # NNODES > 1: srun launches every rank (scripts/common/multinode.sh).
  multinode::server_cmd "${BENCH_EXPERIMENT_DIR}" "${spec}" || return 1

  # shellcheck disable=SC2034  # metadata globals, read by lib::write_metadata
  {
    ENGINE_VERSION=""
    CLIENT_VERSION=""
    if ! lib::is_dry_run; then
      ENGINE_VERSION="$(lib::engine_version "${PHASE_ENGINE}")"
      CLIENT_VERSION="$(lib::client_version "${CLIENT_PYTHON:-}" "${CLIENT}")"
    fi
    if [[ "${RUNTIME}" == "docker" ]]; then
      ENGINE_ENV="docker:${DOCKER_IMAGE} (container ${CONTAINER_NAME}, ${CONTAINER_PYTHON}; docker run ${DOCKER_RUN_ARGS:-})"
    else
      lib::engine_launcher "${PHASE_ENGINE}" 2>/dev/null || true
      ENGINE_ENV="$(dirname "$(dirname "${LIB_LAUNCHER[-1]:-unknown/bin/python}")")"
    fi
    CLIENT_LABEL="sglang.bench_serving"
    [[ "${CLIENT}" != "vllm" ]] || CLIENT_LABEL="vllm bench serve"
  }
  bench::collect_config_args
  local server_line
  server_line="$(lib::quote_cmd "${BENCH_SERVER_CMD[@]}")"
  BENCH_CONFIG_ARGS+=(--config "server_args=${server_line}")
  BENCH_CONFIG_ARGS+=("${MULTINODE_RECORD_ARGS[@]}")
  ((BENCH_PHASE_COUNT == 1)) || BENCH_CONFIG_ARGS+=(--config "phase${index}_server_args=${server_line}")
  lib::write_metadata "${BENCH_RUN_DIR}" "${BENCH_CONFIG_ARGS[@]}" || {
    lib::err "sskj-results metadata ${BENCH_RUN_DIR} failed"
    return 1
  }

  ! lib::is_dry_run || printf '# phase %s: %s (engine %s) -> %s\n' "${index}" "${PHASE_NAME}" "${PHASE_ENGINE}" "${BENCH_RUN_DIR}"
  if [[ "${RUNTIME}" == "docker" ]]; then
    lib::is_dry_run || bench::ensure_container || return 1
    bash "${_BENCH_LIB_DIR}/apply_patches.sh" "${BENCH_RUN_DIR}" || return 1
  fi
  ! lib::is_dry_run || lib::print_cmd "${BENCH_SERVER_CMD[@]}"

  BENCH_SERVER_UP=0
  local rc=0
  # A scenario whose client finished just before a kill is on disk but not
  # yet in results.json: parse first, so `next` counts it as measured.
  if [[ "${RESUME:-0}" == "1" ]] && ! lib::is_dry_run; then
    lib::results parse "${BENCH_RUN_DIR}" ${SLO_TIER:+--slo-tier "${SLO_TIER}"} >&2 ||
      lib::warn "sskj-results parse ${BENCH_RUN_DIR} failed"
  fi
  bench::run_grid || rc=1
  if ((BENCH_SERVER_UP == 1)); then
    bench::stop_phase_server
  fi
  if ((rc != 0)); then
    return 1
  fi
  if ! lib::is_dry_run; then
    lib::results parse "${BENCH_RUN_DIR}" ${SLO_TIER:+--slo-tier "${SLO_TIER}"} >&2 || BENCH_STATUS=1
    lib::results report "${BENCH_RUN_DIR}" --html >&2 || BENCH_STATUS=1
    lib::results validate "${BENCH_RUN_DIR}" >&2 || {
      lib::err "results.json of ${BENCH_RUN_DIR} is not valid"
      BENCH_STATUS=1
    }
  fi
  bench::restore_phase_settings
  export CLIENT_BACKEND="${saved_backend}"
  [[ -n "${saved_backend}" ]] || unset CLIENT_BACKEND
  return 0
}

#######################################
# Print the command that resumes this run.
# Globals:   RUN_ID PLATFORM BENCH_RESULT_ROOT_SET RESULT_ROOT
#            BENCH_ENTRY_SCRIPT (read)
# Outputs:   the command on stdout
# Returns:   0
#######################################
bench::resume_command() {
  local -a cmd=("RESUME=1" "RUN_ID=${RUN_ID}")
  if [[ "${BENCH_RESULT_ROOT_SET:-0}" == "1" ]]; then
    cmd+=("RESULT_ROOT=${RESULT_ROOT}")
  fi
  cmd+=("PLATFORM=${PLATFORM}")
  local line
  line="$(printf '%q ' "${cmd[@]}")"
  printf '%sbash %q' "${line}" "${BENCH_ENTRY_SCRIPT}"
}

#######################################
# Signal handler (INT/TERM): stop the client, the sampler and the server
# tree, keep what was measured (parse), print the resume command, exit.
# Arguments: $1 signal name; $2 exit status (130 or 143)
# Returns:   does not return
#######################################
bench::on_signal() {
  trap '' INT TERM
  lib::warn "received SIG$1; stopping the run"
  if [[ -n "${LIB_CHILD_PID:-}" ]]; then
    lib::stop_tree "${LIB_CHILD_PID}" 5
    LIB_CHILD_PID=""
  fi
  lib::stop_accel_sampler
  lib::stop_server
  [[ -z "${BENCH_RUN_DIR:-}" ]] || rm -f "${BENCH_RUN_DIR}/engine.pid"
  if [[ -n "${BENCH_RUN_DIR:-}" && -f "${BENCH_RUN_DIR}/results.json" ]] && ! lib::is_dry_run; then
    timeout 120 "${SSKJ_RESULTS_CMD[@]}" parse "${BENCH_RUN_DIR}" ${SLO_TIER:+--slo-tier "${SLO_TIER}"} >&2 ||
      lib::warn "sskj-results parse ${BENCH_RUN_DIR} failed"
  fi
  lib::err "interrupted; completed scenarios are kept in results.json. Resume with:"
  printf '%s\n' "$(bench::resume_command)" >&2
  trap - EXIT
  exit "$2"
}

#######################################
# EXIT handler: never leave a server, client or sampler behind.
# Returns:   0
#######################################
bench::on_exit() {
  if [[ -n "${LIB_CHILD_PID:-}" ]]; then
    lib::stop_tree "${LIB_CHILD_PID}" 5
  fi
  lib::stop_accel_sampler
  if [[ -n "${LIB_SERVER_PID:-}" ]]; then
    lib::stop_server
  fi
  return 0
}

#######################################
# Run an experiment: configuration, grid, every phase, comparison, summary.
# Arguments: $1 experiment directory; $2.. phase specs (see file header)
# Globals:   RUN_ID RESULT_ROOT RESUME DRY_RUN SLO_SEARCH COMPARE_BASELINE
#            COMPARE_TITLE COMPARE_MATRIX
#            (read); BENCH_* (written)
# Outputs:   progress on stderr; commands on stdout with DRY_RUN=1
# Returns:   0 all ok, 1 failure, 2 misuse; 130/143 after SIGINT/SIGTERM
#######################################
bench::run_experiment() {
  if (($# < 2)); then
    lib::err "usage: bench::run_experiment EXPERIMENT_DIR PHASE_SPEC..."
    return 2
  fi
  BENCH_EXPERIMENT_DIR="$(cd "$1" && pwd)" || return 2
  shift
  local -a specs=("$@")
  local spec
  for spec in "${specs[@]}"; do
    bench::parse_phase_spec "${spec}" || return 2
  done
  BENCH_ENTRY_SCRIPT="${0}"
  BENCH_PHASE_COUNT="${#specs[@]}"
  BENCH_STATUS=0
  BENCH_RESULT_ROOT_SET=0
  [[ -n "${RESULT_ROOT:-}" ]] && BENCH_RESULT_ROOT_SET=1

  if [[ "${RESUME:-0}" == "1" && -z "${RUN_ID:-}" ]]; then
    lib::err "RESUME=1 needs RUN_ID=<the run to continue>"
    return 2
  fi
  bench::load_config "${BENCH_EXPERIMENT_DIR}" || return 1
  export RUN_ID="${RUN_ID:-$(date '+%Y%m%d-%H%M%S')}"
  # Names become path segments: check them all before anything is written.
  local -a names=("RUN_ID=${RUN_ID}" "EXPERIMENT=${EXPERIMENT}" "PLATFORM=${PLATFORM}" "CHIP=${CHIP}")
  for spec in "${specs[@]}"; do
    bench::parse_phase_spec "${spec}" || return 2
    names+=("phase=${BENCH_PHASE_NAME}" "engine=${BENCH_PHASE_ENGINE}")
  done
  lib::results check-names "${names[@]}" >&2 || return 2
  export RESULT_ROOT="${RESULT_ROOT:-${BENCH_EXPERIMENT_DIR}/results/${RUN_ID}}"
  BENCH_RESULT_ROOT="${RESULT_ROOT}"
  local root
  root="$(lib::repo_root)"
  export SCRIPT_PATH="${BENCH_EXPERIMENT_DIR#"${root}"/}/run_bench.sh"
  if [[ "${RESUME:-0}" == "1" ]]; then
    if [[ ! -d "${BENCH_RESULT_ROOT}" ]]; then
      lib::err "RESUME=1: ${BENCH_RESULT_ROOT} does not exist"
      return 1
    fi
    lib::info "resuming run ${RUN_ID} in ${BENCH_RESULT_ROOT}"
  elif [[ -e "${BENCH_RESULT_ROOT}/results.json" ]] && ! lib::is_dry_run; then
    lib::err "${BENCH_RESULT_ROOT} already holds a run; use RESUME=1 RUN_ID=${RUN_ID} or a new RUN_ID"
    return 1
  fi
  # Before any model load or file: interpreters, model, port, stale engines, ...
  platform::preflight "${BENCH_EXPERIMENT_DIR}" "${specs[@]}" || return 1
  mkdir -p "${BENCH_RESULT_ROOT}/logs" || return 1
  # shellcheck disable=SC2034  # read by lib::log
  LIB_LOG_FILE="${BENCH_RESULT_ROOT}/logs/${EXPERIMENT}_orchestrator_$(date '+%Y%m%d_%H%M%S').log"
  lib::info "experiment ${EXPERIMENT}, run ${RUN_ID}, platform ${PLATFORM} (${ACCELERATOR}), results ${BENCH_RESULT_ROOT}"
  lib::results_init || return 1
  BENCH_SESSION="$(date '+%Y%m%d_%H%M%S')_$$"

  trap 'bench::on_signal INT 130' INT
  trap 'bench::on_signal TERM 143' TERM
  trap 'bench::on_exit' EXIT

  if lib::is_dry_run; then
    printf '# DRY_RUN: experiment %s, platform %s, run %s\n' "${EXPERIMENT}" "${PLATFORM}" "${RUN_ID}"
  fi
  local i=0 baseline=""
  local -a run_dirs=()
  for spec in "${specs[@]}"; do
    i=$((i + 1))
    if ! bench::run_phase "${i}" "${spec}"; then
      lib::err "phase ${spec} failed. After fixing the cause, resume with:"
      printf '%s\n' "$(bench::resume_command)" >&2
      return 1
    fi
    run_dirs+=("${BENCH_RUN_DIR}")
    if ((BENCH_PHASE_COUNT > 1)) && ! lib::is_dry_run; then
      lib::results runset "${BENCH_RESULT_ROOT}" ${COMPARE_BASELINE:+--baseline "${COMPARE_BASELINE}"} \
        ${COMPARE_TITLE:+--title "${COMPARE_TITLE}"} ${COMPARE_MATRIX:+--matrix "${COMPARE_MATRIX}"} >&2 ||
        lib::warn "sskj-results runset ${BENCH_RESULT_ROOT} failed; rerun it by hand"
    fi
    [[ "${PHASE_NAME}" != "${COMPARE_BASELINE:-}" ]] || baseline="${BENCH_RUN_DIR}"
  done

  if ((BENCH_PHASE_COUNT > 1)); then
    local -a cmp=(compare "${run_dirs[@]}")
    if [[ -n "${baseline}" ]]; then
      cmp+=(--baseline "${baseline}")
    elif [[ -n "${COMPARE_BASELINE:-}" ]]; then
      lib::warn "COMPARE_BASELINE=${COMPARE_BASELINE} names no phase; comparing without a baseline"
    fi
    cmp+=(${COMPARE_TITLE:+--title "${COMPARE_TITLE}"} ${COMPARE_MATRIX:+--matrix "${COMPARE_MATRIX}"})
    cmp+=(--out "${BENCH_RESULT_ROOT}" --html)
    if lib::is_dry_run; then
      lib::print_cmd "${SSKJ_RESULTS_CMD[@]}" "${cmp[@]}"
    elif ! lib::results "${cmp[@]}" >&2; then
      lib::err "sskj-results compare failed"
      BENCH_STATUS=1
    fi
  fi

  trap - INT TERM
  local d
  if lib::is_dry_run; then
    lib::info "dry run: nothing was started; metadata written to ${run_dirs[*]/%//results.json}"
  else
    for d in "${run_dirs[@]}"; do
      lib::info "report: ${d}/report.md (and report.html)"
    done
    if ((BENCH_PHASE_COUNT > 1)); then
      lib::info "comparison: ${BENCH_RESULT_ROOT}/comparison.md (and comparison.html)"
    fi
  fi
  if ((BENCH_STATUS != 0)); then
    lib::err "the run finished with errors (see above); resume with: $(bench::resume_command)"
    return 1
  fi
  return 0
}
