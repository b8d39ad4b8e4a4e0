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
# bench::server_main; bench::server_cmd prints the one command of
# `sskj-results server-cmd`); the grid comes from scenarios.tsv or config.env.

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

_BENCH_SETTINGS=()

#######################################
# Load platform and experiment configuration and set run-wide defaults,
# in one `sskj-results config` call (platform file, config.env, the
# run-wide settings PORT SERVER_HOST HEALTH_TIMEOUT_S STOP_GRACE_S
# WARMUP_REQUESTS PROMPTS_PER_CONCURRENCY MIN_PROMPTS CLIENT OOM_PATTERN TP
# defaulted and checked, sskj_results/run/launch.py; with phase specs also
# RUN_ID, the names and the phases' arrays BENCH_PHASE_*).
# Order of precedence: environment > config.env > platforms/<chip>.env.
# Arguments: $1 experiment directory; $2.. [--names] [--phase SPEC]...
# Globals:   many configuration variables (written, exported);
#            BENCH_PHASE_NAMES BENCH_PHASE_ENGINES BENCH_PHASE_BACKENDS
#            BENCH_PHASE_HEALTH_PATHS
#            BENCH_PHASE_SETS_<N> (written, with --phase)
# Returns:   0 ok, 1 invalid configuration, 2 malformed phase spec or name
#######################################
bench::load_config() {
  local exp_dir="$1"
  shift
  [[ -n "${_LIB_ENV_PRESET+x}" ]] || lib::snapshot_env
  lib::results_init || return 1
  lib::read_records env SSKJ_ENV_PRESET="${_LIB_ENV_PRESET}" SSKJ_QUIET_OVERRIDES="${SSKJ_QUIET_OVERRIDES:-}" \
    "${SSKJ_RESULTS_CMD[@]}" config --repo "${REPO_ROOT:-$(lib::repo_root)}" ${PLATFORM:+--platform "${PLATFORM}"} \
    --experiment "${exp_dir}" "$@"
}

#######################################
# Select phase N of the specs loaded by bench::load_config --phase ...
# Arguments: $1 phase index (1-based)
# Globals:   BENCH_PHASE_NAMES BENCH_PHASE_ENGINES BENCH_PHASE_SETS_<N> (read);
#            BENCH_PHASE_NAME, BENCH_PHASE_ENGINE (written),
#            BENCH_PHASE_SETS (written, array of KEY=VALUE)
# Returns:   0 ok, 2 no such phase
#######################################
bench::parse_phase_spec() {
  local i="$1"
  local -n _bench_names=BENCH_PHASE_NAMES _bench_engines=BENCH_PHASE_ENGINES
  if [[ ! "${i}" =~ ^[1-9][0-9]*$ ]] || ((i > ${#_bench_names[@]})); then
    return 2
  fi
  BENCH_PHASE_NAME="${_bench_names[i - 1]}"
  BENCH_PHASE_ENGINE="${_bench_engines[i - 1]}"
  local -n _bench_sets="BENCH_PHASE_SETS_${i}"
  BENCH_PHASE_SETS=("${_bench_sets[@]}")
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
  # an engine's config file (settings that live there) is kept with the run: the command is built once,
  # by preflight, and started later
  ENGINE_CONFIG_DIR="${BENCH_WRITE_ROOT:+${BENCH_WRITE_ROOT}/engine_configs}" SSKJ_LOOP_CONFIG=1 SSKJ_QUIET_OVERRIDES=1 \
    bash "${exp_dir}/start_server.sh" --print-cmd "${spec}" >"${tmp}" || rc=$?
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
  if [[ "${1:-}" == "--help" || "${1:-}" == "-h" ]]; then
    printf 'usage: [SETTING=VALUE ...] bash start_server.sh [--print-cmd] [PHASE_SPEC]\n'
    printf 'Starts (DRY_RUN=1: prints) the server of one phase (default: the platform'"'"'s ENGINE) in the foreground;\n'
    printf '%s\n' '--print-cmd prints its command NUL-separated. Its settings: bash run_bench.sh --help.'
    return 0
  fi
  if [[ "${1:-}" == "--print-cmd" ]]; then
    print=1
    shift
  fi
  if (($# > 1)) || [[ "${1:-}" == -* ]]; then
    lib::err "usage: start_server.sh [--print-cmd] [PHASE_SPEC] (--help: what it does)"
    return 2
  fi
  local spec="${1:-}"
  if [[ "${SSKJ_LOOP_CONFIG:-0}" != "1" || -z "${spec}" || "${PHASE_SPEC:-}" != "${spec}" ]]; then
    # Called by hand: load the configuration (the run loop exported it, with the phase's settings).
    if [[ -z "${spec}" ]]; then
      bench::load_config "${exp_dir}" || return 1
      spec="${ENGINE:?the platform file sets ENGINE}"
    fi
    bench::load_config "${exp_dir}" --phase "${spec}" || return $?
    bench::parse_phase_spec 1 || return 2
    bench::apply_phase_settings
    export PHASE_SPEC="${spec}" PHASE_NAME="${BENCH_PHASE_NAME}" PHASE_ENGINE="${BENCH_PHASE_ENGINE}"
  fi
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
# Give the next bench::server_cmd the phase's engine settings in the
# workflow's terms (tp, kv_cache_dtype, max_num_seqs, max_model_len,
# spec_method, spec_tokens, spec_model, mem_fraction): one set of experiment
# variables gives every engine the equivalent settings, each spelled (or
# written to its config file) by the engine table (`sskj-results server-cmd
# --setting`); an empty value gives no flag.
# Arguments: KEY=VALUE...
# Globals:   _BENCH_SETTINGS (written, array)
# Returns:   0
#######################################
bench::engine_settings() {
  _BENCH_SETTINGS=("$@")
  return 0
}

#######################################
# bench::server_cmd: fill SERVER_CMD with the phase's whole server command;
# bench::server_base with its start only (launcher with the engine table's
# server environment, -m module). Both are spelled by `sskj-results
# server-cmd PHASE_ENGINE` (sskj_results/run/launch.py documents the words:
# model, TP, settings, FLAG..., host, port, the multi-node flags of this
# rank, the engine's *_EXTRA_ARGS), the one server-command builder.
# Arguments: FLAG... the experiment's own flags (server_base: KEY=VALUE...
#            more server environment); may be none
# Globals:   PHASE_ENGINE and the run's settings (read, from the environment);
#            ENGINE_CONFIG_DIR (read: where an engine's config file is
#            written, results/<RUN_ID>/engine_configs by bench::get_server_cmd);
#            SERVER_CMD (written)
# Returns:   0 ok, 1 missing configuration or unknown engine
#######################################
# shellcheck disable=SC2120  # FLAG... is optional
bench::server_cmd() {
  _bench::server_cmd server "$@"
}
# shellcheck disable=SC2120  # KEY=VALUE... is optional
bench::server_base() {
  _bench::server_cmd base "$@"
}

#######################################
# Fill SERVER_CMD from `sskj-results server-cmd PHASE_ENGINE --kind KIND`.
# Arguments: $1 kind (server, base); $2.. its words
# Returns:   0 ok, 1 failed (sskj-results printed why)
#######################################
_bench::server_cmd() {
  local kind="$1" rc=0 kv
  shift
  local -a settings=()
  for kv in "${_BENCH_SETTINGS[@]}"; do
    settings+=(--setting "${kv}")
  done
  _BENCH_SETTINGS=()
  lib::results_init || return 1
  mapfile -d '' -t SERVER_CMD < <("${SSKJ_RESULTS_CMD[@]}" server-cmd "${PHASE_ENGINE}" --kind "${kind}" "${settings[@]}" -- "$@")
  wait "$!" || rc=$?
  return "$((rc != 0))"
}

#######################################
# Make sure the platform's container runs (docker platforms): start a
# stopped one; create a missing one only with AUTO_START_CONTAINER=1, by
# the command `sskj-results phase-begin` planned (sskj_results/run/dryplan.py).
# Globals:   CONTAINER_NAME AUTO_START_CONTAINER BENCH_CONTAINER_CREATE (read)
# Returns:   0 running, 1 not running
#######################################
bench::ensure_container() {
  local state
  local -a create=("${BENCH_CONTAINER_CREATE[@]}")
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
# Start the phase's server and wait until healthy (port must be free; the
# listeners of the port must then be the server's: lib::wait_for_health).
# Globals:   BENCH_SERVER_CMD BENCH_RUN_DIR PORT SERVER_HOST HEALTH_TIMEOUT_S
#            RUNTIME CONTAINER_NAME PHASE_NAME (read); LIB_SERVER_* (written)
# Returns:   0 healthy, 1 failure (server stopped again)
#######################################
bench::start_phase_server() {
  # shellcheck disable=SC2153  # PORT is a run-wide setting (sskj-results config), not a misspelled local
  if ! lib::wait_port_free "${PORT}" "${PORT_FREE_TIMEOUT_S:-30}"; then
    local holder
    holder="$(lib::results engine-owner --port "${PORT}" 2>&1)" || true
    lib::err "${holder#error: } (after ${PORT_FREE_TIMEOUT_S:-30}s): stop it, or set PORT (PORT=auto: a free one)"
    return 1
  fi
  # shellcheck disable=SC2034  # read by lib::stop_server
  LIB_SERVER_CONTAINER=""
  # shellcheck disable=SC2034  # read by lib::stop_server
  LIB_SERVER_TAG=""
  # shellcheck disable=SC2034  # read by lib::stop_server: a rank's server in every node's container
  LIB_SERVER_NODES=1
  if [[ "${RUNTIME:-native}" == "docker" ]]; then
    # shellcheck disable=SC2034  # read by lib::stop_server
    LIB_SERVER_NODES="$(multinode::enabled && echo "${NNODES}" || echo 1)"
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
  if ! lib::wait_for_health "http://${SERVER_HOST}:${PORT}" "${LIB_SERVER_PID}" "${HEALTH_TIMEOUT_S}" "${LIB_SERVER_LOG}" \
    "${BENCH_PHASE_HEALTH_PATHS[${PHASE_INDEX:-1} - 1]:-/health}" "${PORT}" "${LIB_SERVER_TAG}"; then
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
# Run a child command, its output appended to a log headed by the quoted
# command as shown (secrets redacted by the planner).
# Arguments: $1 log file; $2 number of words shown; $3.. shown words, then
#            the command
# Returns:   the command's status
#######################################
bench::step() {
  local log="$1" n="$2"
  shift 2
  printf '# %s\n' "$(lib::quote_words "${@:1:n}")" >>"${log}"
  shift "${n}"
  lib::run_child "${log}" "$@"
}

#######################################
# Run one scenario as `sskj-results step` planned it (BENCH_*_CMD arrays):
# warmup, prefix-cache reset, /metrics before, accelerator sampling, the
# bench client under `sskj-results run-client` (which watches the server,
# stops the client when the server dies and records a server failure in
# skipped_after_oom.csv), then, in that same process, the sampler's stop,
# /metrics after and the next step, whose records it leaves in
# BENCH_NEXT_RECORDS for bench::run_grid.
# Globals:   BENCH_RUN_DIR BENCH_C BENCH_IN BENCH_OUT BENCH_N BENCH_STEM
#            BENCH_RAW BENCH_RESET_OUT BENCH_*_CMD BENCH_*_SHOWN BENCH_SUPERVISE_ARGS
#            BENCH_SESSION_FILE BENCH_NEXT_RECORDS LIB_SERVER_* (read)
# Returns:   0 ok; 1 client failed while the server is fine (not recorded,
#            rerun on resume); 3 server died or reported out-of-memory;
#            4 another process holds the engine's port (not recorded)
#######################################
bench::run_scenario() {
  local name="c${BENCH_C}_i${BENCH_IN}_o${BENCH_OUT}" rc=0
  local client_log="${BENCH_RUN_DIR}/logs/client_${BENCH_STEM}.log"
  rm -f "${BENCH_RAW}" "${BENCH_NEXT_RECORDS}"
  lib::info "scenario ${name}: ${BENCH_N} prompts -> ${BENCH_RAW#"${BENCH_RESULT_ROOT}"/}"
  local offset=0
  [[ ! -f "${LIB_SERVER_LOG:-}" ]] || offset="$(stat -c %s "${LIB_SERVER_LOG}")"
  if ((${#BENCH_WARMUP_CMD[@]} > 0)); then
    bench::step "${client_log}" "${#BENCH_WARMUP_SHOWN[@]}" "${BENCH_WARMUP_SHOWN[@]}" "${BENCH_WARMUP_CMD[@]}" || {
      lib::warn "warmup failed (see ${client_log}):"
      tail -n 5 "${client_log}" >&2 || true
    }
  fi
  # the answer is judged by parse (a refusal can be 200 {"success": false}); no answer: an empty file;
  # an engine without a cache reset (its row's reset_path empty) gets no command
  if ((${#BENCH_RESET_CMD[@]} > 0)); then
    rm -f "${BENCH_RESET_OUT}"
    if ! "${BENCH_RESET_CMD[@]}" 2>/dev/null; then
      lib::warn "POST ${BENCH_RESET_CMD[-1]} failed: prefix cache not reset"
      [[ -s "${BENCH_RESET_OUT}" ]] || : >"${BENCH_RESET_OUT}"
    fi
  fi
  bench::save_metrics "${BENCH_METRICS_BEFORE_CMD[@]}"
  local -a supervise=("${SSKJ_RESULTS_CMD[@]}" run-client "${BENCH_SUPERVISE_ARGS[@]}"
    --server-pid "${LIB_SERVER_PID}" --server-log "${LIB_SERVER_LOG}" --log-offset "${offset}" --port "${PORT}")
  [[ -z "${LIB_SERVER_TAG:-}" ]] || supervise+=(--tag "${LIB_SERVER_TAG}")
  lib::start_accel_sampler "${BENCH_RUN_DIR}/gpu_logs/${BENCH_STEM}"
  supervise+=(--session "${BENCH_SESSION_FILE}" --records-out "${BENCH_NEXT_RECORDS}")
  [[ -z "${LIB_SAMPLER_PID:-}" ]] || supervise+=(--sampler-pid "${LIB_SAMPLER_PID}")
  supervise+=(--)
  bench::step "${client_log}" "$((${#supervise[@]} + ${#BENCH_CLIENT_SHOWN[@]}))" "${supervise[@]}" \
    "${BENCH_CLIENT_SHOWN[@]}" "${supervise[@]}" "${BENCH_CLIENT_CMD[@]}" || rc=$?
  lib::stop_accel_sampler
  if ((rc == 3)); then
    tail -n 1 "${client_log}" >&2 2>/dev/null || true
    lib::err "server failure during ${name}; log ${LIB_SERVER_LOG}"
  elif ((rc == 4)); then
    lib::err "$(tail -n 1 "${client_log}" 2>/dev/null | sed 's/^error: //'); ${name} not recorded, phase stopped"
  elif ((rc != 0)); then
    lib::err "bench client failed for ${name} (exit ${rc}); last lines of ${client_log}:"
    tail -n 15 "${client_log}" >&2 || true
  fi
  return "${rc}"
}

#######################################
# Save GET /metrics as the planner's curl command says (nothing when the
# engine has no /metrics).
# Arguments: the command (curl ... -o FILE URL), or none
# Returns:   0 (a failure is a warning, no file left)
#######################################
bench::save_metrics() {
  (($# > 0)) || return 0
  if ! "$@" 2>/dev/null; then
    rm -f "$6"
    lib::warn "GET $7 failed; no ${6##*/}"
  fi
  return 0
}

#######################################
# The run loop of a phase: `sskj-results step` records the scenario just
# measured and returns the next one (grid order, resume, skips after a
# failure, or the SLO search with SLO_SEARCH=1: all decided there) with
# its commands; make sure the server is up, run it, repeat until the step
# returns none. After a server failure the server is stopped (and
# restarted for the next scenario).
# Globals:   BENCH_RUN_DIR BENCH_SESSION RESUME (read); BENCH_STATUS (written)
# Returns:   0 done (failures recorded), 1 server could not (re)start,
#            the step failed or the port is not our engine's
#######################################
bench::run_grid() {
  local rc
  local -a parse=()
  BENCH_NEXT_RECORDS="${BENCH_TMP_DIR}/next_step.records"
  # A scenario whose client finished just before a kill is on disk but not
  # yet in results.json: parse first, so the planner counts it as measured.
  [[ "${RESUME:-0}" != "1" ]] || parse=(--parse)
  while :; do
    # run-client made the step after its client (one start per scenario);
    # when it could not, the step is made here.
    if [[ -s "${BENCH_NEXT_RECORDS}" ]]; then
      lib::read_records_file "${BENCH_NEXT_RECORDS}" || return 1
    else
      lib::read_records "${SSKJ_RESULTS_CMD[@]}" step "${BENCH_RUN_DIR}" --session "${BENCH_SESSION_FILE}" \
        "${parse[@]}" || {
        lib::err "sskj-results step ${BENCH_RUN_DIR} failed"
        return 1
      }
    fi
    rm -f "${BENCH_NEXT_RECORDS}"
    parse=(--parse)
    [[ -n "${BENCH_STEM}" ]] || return 0
    bench::ensure_server || return 1
    rc=0
    bench::run_scenario || rc=$?
    case "${rc}" in
      0) ;;
      3) bench::stop_phase_server ;;
      4) return 1 ;;
      *) BENCH_STATUS=1 ;;
    esac
  done
}

#######################################
# Run one phase in its run directory: server command, metadata (and a dry
# run's plan) by `sskj-results phase-begin`, patches, server, the steps of
# the grid (or SLO search), then `sskj-results phase-end` (parse, report,
# validate, the run set's index).
# Arguments: $1 phase index (1-based); $2 phase spec
# Globals:   BENCH_* (read/written), configuration (read)
# Outputs:   commands on stdout with DRY_RUN=1
# Returns:   0 ok, 1 failure
#######################################
bench::run_phase() {
  local index="$1" spec="$2"
  bench::parse_phase_spec "${index}" || return 1
  bench::apply_phase_settings
  export PHASE_SPEC="${spec}" PHASE_NAME="${BENCH_PHASE_NAME}" PHASE_ENGINE="${BENCH_PHASE_ENGINE}" PHASE_INDEX="${index}"
  local saved_backend="${CLIENT_BACKEND:-}"
  if [[ -z "${CLIENT_BACKEND:-}" ]]; then
    export CLIENT_BACKEND="${BENCH_PHASE_BACKENDS[index - 1]}"
  fi
  BENCH_RUN_DIR="${BENCH_PHASE_RUN_DIRS[index - 1]}"
  if lib::is_dry_run; then
    # a dry run's session (the scenarios it listed) is its own, never in a run's logs/
    BENCH_SESSION_FILE="${BENCH_TMP_DIR}/plan_${index}.txt"
  else
    BENCH_SESSION_FILE="${BENCH_RUN_DIR}/logs/plan_${BENCH_SESSION}.txt"
  fi
  ((BENCH_DRY_EXISTING == 1)) || mkdir -p "${BENCH_RUN_DIR}"/{raw_outputs,logs,gpu_logs,server_metrics} || return 1
  lib::info "phase ${index}/${BENCH_PHASE_COUNT} ${PHASE_NAME} (engine ${PHASE_ENGINE}) -> ${BENCH_RUN_DIR}"
  if multinode::enabled; then
    # NNODES > 1: srun launches every rank (scripts/common/multinode.sh).
    multinode::server_cmd "${BENCH_EXPERIMENT_DIR}" "${spec}" || return 1
  else
    MULTINODE_RECORD_ARGS=()
    mapfile -d '' -t BENCH_SERVER_CMD <"${BENCH_TMP_DIR}/phase${index}.cmd" || return 1
  fi

  # the phase's config (port, settings, the server command as quoted here, a multi-node engine's ranks and
  # nodes) and metadata: recorded by phase-begin (sskj_results/run/dryplan.py: config_args)
  BENCH_PLAN=() BENCH_PLAN_BEFORE=()
  local -a begin=(phase-begin "${BENCH_RUN_DIR}" --session "${BENCH_SESSION_FILE}" --phases "${BENCH_PHASE_COUNT}"
    --shell-cmd "${SSKJ_RESULTS_CMD[0]}" --lib-dir "${_BENCH_LIB_DIR}"
    --server-line "$(lib::quote_cmd "${BENCH_SERVER_CMD[@]}")")
  ((BENCH_DRY_EXISTING == 0)) || begin+=(--print-only)
  BENCH_PATCH_LIST="" BENCH_PATCHES_RECORDED=""
  if [[ "${RUNTIME}" == "docker" && -n "${PATCH_ROOT:-}" ]]; then
    begin+=(--patches "${PATCH_ROOT}")
  fi
  lib::read_records "${SSKJ_RESULTS_CMD[@]}" "${begin[@]}" -- "${MULTINODE_RECORD_ARGS[@]}" || {
    lib::err "sskj-results metadata ${BENCH_RUN_DIR} failed"
    return 1
  }

  # a dry run: the phase's heading, directories, metadata, prompt sets and container step
  if lib::is_dry_run; then
    lib::print_plan "${BENCH_PLAN_BEFORE[@]}" || return 1
  fi
  if [[ "${RUNTIME}" == "docker" ]]; then
    lib::is_dry_run || bench::ensure_container || return 1
    local -a patch_args=("${BENCH_RUN_DIR}")
    if [[ -n "${BENCH_PATCHES_RECORDED}" ]]; then
      # phase-begin listed the series (and recorded it where nothing will be applied)
      printf '%s' "${BENCH_PATCH_LIST}" >"${BENCH_TMP_DIR}/patches${index}.txt" || return 1
      patch_args+=(--listing "${BENCH_TMP_DIR}/patches${index}.txt")
      ((BENCH_PATCHES_RECORDED == 0)) || patch_args+=(--recorded)
    fi
    bash "${_BENCH_LIB_DIR}/apply_patches.sh" "${patch_args[@]}" || return 1
  fi
  if lib::is_dry_run; then
    # the engine's start and health wait, every scenario's commands, the engine's stop, the phase's end
    lib::print_plan "${BENCH_PLAN[@]}" || return 1
  else
    BENCH_SERVER_UP=0
    local rc=0
    bench::run_grid || rc=1
    if ((BENCH_SERVER_UP == 1)); then
      bench::stop_phase_server
    fi
    if ((rc != 0)); then
      return 1
    fi
    lib::results "${BENCH_END_ARGS[@]}" >&2 || BENCH_STATUS=1
  fi
  bench::restore_phase_settings
  export CLIENT_BACKEND="${saved_backend}"
  [[ -n "${saved_backend}" ]] || unset CLIENT_BACKEND
  return 0
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
  printf '%s\n' "$(lib::quote_words "${BENCH_RESUME_CMD[@]}")" >&2
  [[ -z "${BENCH_TMP_DIR:-}" ]] || rm -rf "${BENCH_TMP_DIR}"
  [[ -z "${BENCH_DRY_REMOVE:-}" ]] || rm -rf -- "${BENCH_DRY_REMOVE}"
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
  [[ -z "${BENCH_TMP_DIR:-}" ]] || rm -rf "${BENCH_TMP_DIR}"
  # what a dry run made in the experiment's results/ (bench::run_experiment)
  [[ -z "${BENCH_DRY_REMOVE:-}" ]] || rm -rf -- "${BENCH_DRY_REMOVE}"
  return 0
}

#######################################
# Print the end-of-run summary (`sskj-results run-summary --loop`): points
# measured per phase (the run directories that hold results.json, each
# once; nothing without one), those qualified or disqualified with their
# checks, what to look at. With STRICT=1 a disqualified point fails it.
# Arguments: $1 the comparison.md or ""; $2.. the phases' run directories
# Outputs:   the summary on stderr
# Returns:   0, 1 when STRICT=1 and a point is disqualified (or no summary)
#######################################
bench::print_summary() {
  local comparison="$1"
  shift
  lib::results run-summary --loop ${comparison:+--comparison "${comparison}"} -- "$@"
}

#######################################
# Run an experiment: configuration, grid, every phase, comparison, summary.
# Arguments: $1 experiment directory; $2.. phase specs (see file header)
# Globals:   RUN_ID RESULT_ROOT RESUME DRY_RUN SLO_SEARCH COMPARE_BASELINE
#            COMPARE_TITLE COMPARE_MATRIX STRICT
#            (read); BENCH_* (written)
# Outputs:   progress and the end-of-run summary on stderr; commands on
#            stdout with DRY_RUN=1
# Returns:   0 all ok, 1 failure (or STRICT=1 and a disqualified point),
#            2 misuse; 130/143 after SIGINT/SIGTERM
#######################################
bench::run_experiment() {
  if (($# < 2)); then
    lib::err "usage: bench::run_experiment EXPERIMENT_DIR PHASE_SPEC..."
    return 2
  fi
  BENCH_EXPERIMENT_DIR="$(cd "$1" && pwd)" || return 2
  shift
  local -a specs=("$@") phase_args=()
  local spec
  for spec in "${specs[@]}"; do
    phase_args+=(--phase "${spec}")
  done
  BENCH_PHASE_COUNT="${#specs[@]}"
  BENCH_STATUS=0
  # Configuration, RUN_ID, the phases and every name that becomes a path
  # segment, checked before anything is written; the run's start
  # (sskj_results/run/loopstart.py): RESUME=1's checks, RESULT_ROOT,
  # BENCH_RESULT_ROOT, a dry run's BENCH_DRY_EXISTING (a run that exists:
  # nothing written into it) and BENCH_DRY_REMOVE (what it made, removed at
  # its exit), the resume command BENCH_RESUME_CMD.
  local rc=0
  bench::load_config "${BENCH_EXPERIMENT_DIR}" --names --start "${0}" "${phase_args[@]}" || rc=$?
  ((rc == 0)) || return "${rc}"
  BENCH_WRITE_ROOT="${BENCH_RESULT_ROOT}"
  local root
  root="$(lib::repo_root)"
  export SCRIPT_PATH="${BENCH_EXPERIMENT_DIR#"${root}"/}/run_bench.sh"
  BENCH_TMP_DIR="$(mktemp -d)" || return 1
  # shellcheck disable=SC2034  # read by lib::read_records: its records files go where the exit trap cleans
  LIB_TMP_DIR="${BENCH_TMP_DIR}"
  ((BENCH_DRY_EXISTING == 0)) || BENCH_WRITE_ROOT="${BENCH_TMP_DIR}"
  trap 'bench::on_exit' EXIT
  # Every phase's server command is built once, kept in BENCH_TMP_DIR for the run.
  export SSKJ_LOOP_CONFIG=1
  # Before any model load or file: interpreters, model, port, stale engines, ...
  platform::preflight "${BENCH_EXPERIMENT_DIR}" "${specs[@]}" || return 1
  mkdir -p "${BENCH_WRITE_ROOT}/logs" || return 1
  # shellcheck disable=SC2034  # read by lib::log
  LIB_LOG_FILE="${BENCH_WRITE_ROOT}/logs/${EXPERIMENT}_orchestrator_$(date '+%Y%m%d_%H%M%S').log"
  lib::info "experiment ${EXPERIMENT}, run ${RUN_ID}, platform ${PLATFORM} (${ACCELERATOR}), results ${BENCH_RESULT_ROOT}"
  BENCH_SESSION="$(date '+%Y%m%d_%H%M%S')_$$"

  trap 'bench::on_signal INT 130' INT
  trap 'bench::on_signal TERM 143' TERM
  trap 'bench::on_exit' EXIT

  if lib::is_dry_run; then
    printf '# DRY_RUN: experiment %s, platform %s, run %s\n' "${EXPERIMENT}" "${PLATFORM}" "${RUN_ID}"
  fi
  local i=0
  local -a run_dirs=("${BENCH_PHASE_RUN_DIRS[@]}")
  for spec in "${specs[@]}"; do
    i=$((i + 1))
    if ! bench::run_phase "${i}" "${spec}"; then
      lib::is_dry_run || bench::print_summary "" "${run_dirs[@]:0:i-1}" "${BENCH_RUN_DIR:-}" || true
      lib::err "phase ${spec} failed. After fixing the cause, resume with:"
      printf '%s\n' "$(lib::quote_words "${BENCH_RESUME_CMD[@]}")" >&2
      return 1
    fi
  done

  # several phases: one comparison (config --start planned it, its baseline the phase COMPARE_BASELINE names)
  if ((BENCH_PHASE_COUNT > 1)); then
    [[ -z "${BENCH_COMPARE_WARNING}" ]] || lib::warn "${BENCH_COMPARE_WARNING}"
    if lib::is_dry_run; then
      lib::print_cmd "${SSKJ_RESULTS_CMD[@]}" "${BENCH_COMPARE_ARGS[@]}"
    elif ! lib::results "${BENCH_COMPARE_ARGS[@]}" >&2; then
      lib::err "sskj-results compare failed"
      BENCH_STATUS=1
    fi
  fi

  trap - INT TERM
  local d
  if lib::is_dry_run && ((BENCH_DRY_EXISTING == 1)); then
    lib::info "dry run: nothing was started, nothing written into the existing run ${BENCH_RESULT_ROOT}"
  elif lib::is_dry_run && [[ -n "${BENCH_DRY_REMOVE}" ]]; then
    lib::info "dry run: nothing was started, nothing is kept (RESULT_ROOT=DIR keeps the metadata it records in DIR)"
  elif lib::is_dry_run; then
    lib::info "dry run: nothing was started; metadata written to ${run_dirs[*]/%//results.json}"
  else
    for d in "${run_dirs[@]}"; do
      lib::info "report: ${d}/report.md (and report.html)"
    done
    if ((BENCH_PHASE_COUNT > 1)); then
      lib::info "comparison: ${BENCH_RESULT_ROOT}/comparison.md (and comparison.html)"
    fi
  fi
  local strict_ok=1 comparison=""
  ((BENCH_PHASE_COUNT == 1)) || comparison="${BENCH_RESULT_ROOT}/comparison.md"
  lib::is_dry_run || bench::print_summary "${comparison}" "${run_dirs[@]}" || strict_ok=0
  if ((BENCH_STATUS != 0)); then
    lib::err "the run finished with errors (see above); resume with: $(lib::quote_words "${BENCH_RESUME_CMD[@]}")"
    return 1
  fi
  ((strict_ok == 1)) || return 1
  return 0
}

#######################################
# run_bench.sh as a command: --help (or -h) prints its usage and every
# setting it reads (`sskj-results config --usage`, from the package's one
# list of settings) and exits 0, starting nothing; any other argument is
# refused (exit 2): settings are environment variables. Run when a
# run_bench.sh sources this file (its arguments are then the script's).
# Arguments: the script's arguments
# Returns:   0 without arguments; else does not return
#######################################
bench::script_args() {
  (($# > 0)) || return 0
  if (($# == 1)) && [[ "$1" == "--help" || "$1" == "-h" ]]; then
    lib::results_init || exit 1
    "${SSKJ_RESULTS_CMD[@]}" config --repo "$(lib::repo_root)" --usage "$0"
    exit $?
  fi
  lib::err "$0 takes no arguments, got: $(lib::quote_words "$@") (settings are environment variables; bash $0 --help lists them)"
  exit 2
}

if [[ "${0##*/}" == "run_bench.sh" ]]; then
  bench::script_args "$@"
fi
