# shellcheck shell=bash source-path=SCRIPTDIR
#
# Shared shell helpers of the benchmark workflow.
#
# Sourcing this file only defines functions (names lib::*, private _lib::*).
# Nothing here computes metrics: results.json belongs to the Python package
# (`sskj-results`), which these functions call.
#
# Conventions: errors go to stderr through lib::err; functions return 2 for
# misuse (bad arguments), 1 for failure. Commands are built as arrays and
# never eval'ed. With DRY_RUN=1 the functions that would start something print
# the exact command (printf '%q ', secrets redacted) to stdout instead.

#######################################
# Print a timestamped log line to stderr (and to LIB_LOG_FILE when set).
# Globals:   LIB_LOG_FILE (read, optional)
# Arguments: $1 level (INFO, WARN, ERROR); $2.. message
# Outputs:   one line on stderr
# Returns:   0
#######################################
lib::log() {
  local level="$1"
  shift
  local line
  line="[$(date '+%Y-%m-%dT%H:%M:%S%z')] [${level}] $*"
  printf '%s\n' "${line}" >&2
  if [[ -n "${LIB_LOG_FILE:-}" ]]; then
    printf '%s\n' "${line}" >>"${LIB_LOG_FILE}" 2>/dev/null || true
  fi
  return 0
}

#######################################
# lib::info, lib::warn, lib::err: log a message at that level (lib::err is
# the one error helper; callers return 1 or 2 themselves).
# Arguments: message words
# Outputs:   one line on stderr
# Returns:   0
#######################################
lib::info() {
  lib::log INFO "$@"
}
lib::warn() {
  lib::log WARN "$@"
}
lib::err() {
  lib::log ERROR "$@"
}

#######################################
# Tell whether DRY_RUN is on.
# Globals:   DRY_RUN (read)
# Returns:   0 when DRY_RUN=1, else 1
#######################################
lib::is_dry_run() {
  [[ "${DRY_RUN:-0}" == "1" ]]
}

#######################################
# Print the repository root (the directory two levels above this file).
# Outputs:   absolute path on stdout
# Returns:   0
#######################################
lib::repo_root() {
  (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
}

#######################################
# Check that every named variable is set and non-empty; report all missing
# ones in one message.
# Arguments: variable names
# Outputs:   error on stderr naming every missing variable
# Returns:   0 all set, 1 some missing, 2 no names given
#######################################
lib::require_env() {
  if (($# == 0)); then
    lib::err "lib::require_env: no variable names given"
    return 2
  fi
  local name
  local -a missing=()
  for name in "$@"; do
    if [[ ! "${name}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      lib::err "lib::require_env: invalid variable name '${name}'"
      return 2
    fi
    if [[ -z "${!name:-}" ]]; then
      missing+=("${name}")
    fi
  done
  if ((${#missing[@]} > 0)); then
    lib::err "missing required variables: ${missing[*]}"
    return 1
  fi
  return 0
}

#######################################
# Remember which variables the caller's environment sets, so that config
# files never override them (environment > config.env > platform .env).
# lib::load_env_file hands the list to `sskj-results env` as SSKJ_ENV_PRESET
# (in the environment of that command only, so child scripts take their own
# snapshot).
# Globals:   _LIB_ENV_PRESET (written: the names, one a line)
# Returns:   0
#######################################
lib::snapshot_env() {
  _LIB_ENV_PRESET="$(compgen -e)"
  return 0
}

#######################################
# Load KEY=VALUE lines from a config file WITHOUT executing it. The file is
# parsed by `sskj-results env` (sskj_results/contract/envfile.py: comments, blank
# lines, optional `export`, quoted values, ${VAR} references to exported
# variables and to keys set earlier in the file; command substitution is an
# error), which prints NUL-terminated KEY=VALUE records to export. A variable
# that the caller's environment already set (see lib::snapshot_env; taken
# here when no snapshot exists yet) is kept as it is, so
# `PORT=1234 bash run_bench.sh` overrides config files. Loaded variables are
# exported so that child scripts (start_server.sh) see the same values.
# Keys named after --protect are always taken from the file (identity keys
# such as CONTAINER_NAME are too often set in environments for other
# purposes). Every environment override is logged (unless
# SSKJ_QUIET_OVERRIDES is set, as for child scripts of the run loop).
# Arguments: $1 file; optional: --protect KEY...
# Globals:   _LIB_ENV_PRESET (read, or written through lib::snapshot_env);
#            SSKJ_RESULTS_CMD (through lib::results_init, which may create
#            the repo venv); SSKJ_QUIET_OVERRIDES (read); the file's
#            variables (written, exported)
# Outputs:   errors name file:line; overrides logged on stderr
# Returns:   0 ok, 1 unreadable file, syntax error or no sskj-results,
#            2 misuse
#######################################
lib::load_env_file() {
  if (($# < 1)) || { (($# > 1)) && [[ "$2" != "--protect" ]]; }; then
    lib::err "usage: lib::load_env_file FILE [--protect KEY...]"
    return 2
  fi
  local file="$1" key
  local -a args=()
  shift
  (($# > 0)) && shift
  for key in "$@"; do
    args+=(--protect "${key}")
  done
  if [[ ! -r "${file}" ]]; then
    lib::err "cannot read config file ${file}"
    return 1
  fi
  if [[ -z "${_LIB_ENV_PRESET+x}" ]]; then
    lib::snapshot_env
  fi
  lib::results_init || return 1
  lib::export_records "sskj-results env ${file}" env SSKJ_ENV_PRESET="${_LIB_ENV_PRESET}" \
    SSKJ_QUIET_OVERRIDES="${SSKJ_QUIET_OVERRIDES:-}" "${SSKJ_RESULTS_CMD[@]}" env "${args[@]}" -- "${file}"
}

#######################################
# Export the NUL-terminated KEY=VALUE records a command prints
# (`sskj-results env`, `sskj-results run-settings`).
# Arguments: $1 what to call the command in messages; $2.. the command
# Globals:   the records' variables (written, exported)
# Returns:   0 ok, 1 or 2 as the command (it printed why), 1 otherwise
#######################################
lib::export_records() {
  local what="$1" kv key rc=0
  shift
  while IFS= read -r -d '' kv; do
    key="${kv%%=*}"
    if [[ "${kv}" != *=* || ! "${key}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      lib::err "${what}: unexpected record '${kv}'"
      return 1
    fi
    declare -gx "${key}=${kv#*=}"
  done < <("$@")
  wait "$!" || rc=$?
  case "${rc}" in
    0 | 1 | 2) return "${rc}" ;;
    *)
      lib::err "${what} failed (exit ${rc})"
      return 1
      ;;
  esac
}

#######################################
# Read the records a run-loop command prints (sskj_results/run/records.py):
# NUL-separated words, each record led by a tag: `v NAME VALUE` (exported),
# `l NAME VALUE` (this shell), `a NAME COUNT WORD...` (an array), `# TEXT`
# (a line printed on stdout), `$ COUNT WORD...` (a command printed quoted),
# `! TEXT` (a line printed on stderr). Names are checked; nothing is
# evaluated.
# The command's records go to a file first (LIB_TMP_DIR, else TMPDIR), which
# bash reads in blocks; from a pipe it would read them one byte at a time.
# Arguments: the command
# Globals:   the records' variables and arrays (written); LIB_TMP_DIR (read)
# Outputs:   the `#` and `$` records on stdout, the `!` records on stderr
# Returns:   the command's status (1 for a malformed record)
#######################################
lib::read_records() {
  local file rc=0
  file="$(mktemp "${LIB_TMP_DIR:-${TMPDIR:-/tmp}}/sskj-records.XXXXXX")" || return 1
  "$@" >"${file}" || rc=$?
  _lib::parse_records "$1 $2" <"${file}" || rc=$((rc == 0 ? 1 : rc))
  rm -f "${file}"
  return "${rc}"
}

#######################################
# Read the records of a file a run-loop command wrote (the format of
# lib::read_records).
# Arguments: $1 the file
# Globals:   the records' variables and arrays (written)
# Outputs:   the `#` and `$` records on stdout, the `!` records on stderr
# Returns:   0, 1 for a missing file or a malformed record
#######################################
lib::read_records_file() {
  local file="$1"
  if [[ ! -f "${file}" ]]; then
    lib::err "records file ${file} is missing"
    return 1
  fi
  _lib::parse_records "records file" <"${file}"
}

# Parse records on stdin ($1 names their source in messages).
_lib::parse_records() {
  local tag name value what="$1"
  local -a words=()
  while IFS= read -r -d '' tag; do
    case "${tag}" in
      v | l | a)
        IFS= read -r -d '' name || { lib::err "${what}: truncated record"; return 1; }
        if [[ ! "${name}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
          lib::err "${what}: unexpected record name '${name}'"
          return 1
        fi
        if [[ "${tag}" == a ]]; then
          _lib::read_words || return 1
          _lib::set_array "${name}" "${words[@]}"
        else
          IFS= read -r -d '' value || { lib::err "${what}: truncated record"; return 1; }
          if [[ "${tag}" == v ]]; then
            declare -gx "${name}=${value}"
          else
            declare -g "${name}=${value}"
          fi
        fi
        ;;
      "#")
        IFS= read -r -d '' value || { lib::err "${what}: truncated record"; return 1; }
        printf '%s\n' "${value}"
        ;;
      "!")
        IFS= read -r -d '' value || { lib::err "${what}: truncated record"; return 1; }
        printf '%s\n' "${value}" >&2
        ;;
      "$")
        _lib::read_words || return 1
        lib::quote_words "${words[@]}"
        printf '\n'
        ;;
      *)
        lib::err "${what}: unexpected record '${tag}'"
        return 1
        ;;
    esac
  done
  return 0
}

# Read COUNT and COUNT words into the caller's `words` (of lib::read_records).
_lib::read_words() {
  local n
  if ! IFS= read -r -d '' n || [[ ! "${n}" =~ ^[0-9]+$ ]]; then
    lib::err "malformed record count"
    return 1
  fi
  words=()
  n=$((10#${n}))
  ((n > 0)) || return 0 # (mapfile -n 0 would read every word left)
  mapfile -d '' -t -n "${n}" words
  if ((${#words[@]} != n)); then
    lib::err "truncated record"
    return 1
  fi
}

# Set the global array named $1 to the remaining arguments.
_lib::set_array() {
  local -n _lib_target="$1"
  shift
  _lib_target=("$@")
}

#######################################
# Print the words of a dry run's plan (BENCH_PLAN of `sskj-results
# phase-begin`): `#` TEXT as a line, `$` COUNT WORD... as a quoted command,
# `%` COUNT PART... as one line of literal text and words quoted (printf %q)
# in turn (sskj_results/run/dryplan.py).
# Arguments: the plan's words
# Outputs:   the lines on stdout
# Returns:   0 ok, 1 malformed plan
#######################################
lib::print_plan() {
  local -a plan=("$@")
  local i=0 n j
  while ((i < ${#plan[@]})); do
    case "${plan[i]}" in
      "#")
        printf '%s\n' "${plan[i + 1]}"
        i=$((i + 2))
        ;;
      "$")
        n="${plan[i + 1]}"
        lib::quote_words "${plan[@]:i+2:n}"
        printf '\n'
        i=$((i + 2 + n))
        ;;
      "%")
        n="${plan[i + 1]}"
        for ((j = 0; j < n; j++)); do
          if ((j % 2 == 0)); then
            printf '%s' "${plan[i + 2 + j]}"
          else
            printf '%q' "${plan[i + 2 + j]}"
          fi
        done
        printf '\n'
        i=$((i + 2 + n))
        ;;
      *)
        lib::err "malformed plan word '${plan[i]}'"
        return 1
        ;;
    esac
  done
}

#######################################
# Print words as one shell-pasteable line (printf '%q '), as they are:
# callers pass words already redacted (no trailing newline).
# Arguments: the words
# Outputs:   the line on stdout
# Returns:   0
#######################################
lib::quote_words() {
  local line
  printf -v line '%q ' "$@"
  printf '%s' "${line% }"
}

#######################################
# Copy an argument list with secret values replaced by '<redacted>'. The
# rule is sskj_results/contract/redact.py (the one redaction of the project; see its
# docstring), run through scripts/common/redact.py with the interpreter of
# sskj-results (-I -S: no site, no PYTHONPATH; milliseconds). When it
# cannot run, the command is not shown.
# Arguments: the words
# Globals:   LIB_REDACTED (written, array); _LIB_REDACT_CMD (cached)
# Returns:   0 redacted, 1 redactor failed (LIB_REDACTED says so)
#######################################
lib::redact_args() {
  LIB_REDACTED=()
  (($# > 0)) || return 0
  if [[ -z "${_LIB_REDACT_CMD[0]:-}" ]]; then
    local py=python3 first=""
    if lib::results_init >/dev/null 2>&1 && [[ -r "${SSKJ_RESULTS_CMD[0]}" ]]; then
      IFS= read -r first <"${SSKJ_RESULTS_CMD[0]}" || true
      [[ "${first}" =~ ^\#\!(/[^[:space:]]*python[0-9.]*)$ ]] && py="${BASH_REMATCH[1]}"
    fi
    _LIB_REDACT_CMD=("${py}" -I -S "$(lib::repo_root)/scripts/common/redact.py" --)
  fi
  mapfile -d '' -t LIB_REDACTED < <("${_LIB_REDACT_CMD[@]}" "$@" 2>/dev/null)
  if ((${#LIB_REDACTED[@]} != $#)); then
    LIB_REDACTED=("<command not shown: ${_LIB_REDACT_CMD[*]:0:3} failed>")
    return 1
  fi
  return 0
}

#######################################
# Render a command as one shell-pasteable line (printf '%q '), secrets
# redacted, without a trailing blank.
# Arguments: the command words
# Outputs:   the line on stdout (no newline)
# Returns:   0
#######################################
lib::quote_cmd() {
  local -a LIB_REDACTED=()
  lib::redact_args "$@" || true
  local line
  line="$(printf '%q ' "${LIB_REDACTED[@]}")"
  printf '%s' "${line% }"
}

#######################################
# Print a command that would run (DRY_RUN) as one quoted line on stdout.
# Arguments: the command words
# Outputs:   one line on stdout
# Returns:   0
#######################################
lib::print_cmd() {
  printf '%s\n' "$(lib::quote_cmd "$@")"
}

#######################################
# Resolve the sskj-results command: $SSKJ_RESULTS_BIN, else sskj-results on
# PATH, else <repo>/.venv/bin/sskj-results; when none exists, create the repo
# venv and install the package into it (editable).
# Globals:   SSKJ_RESULTS_BIN (read); SSKJ_RESULTS_CMD (written, array)
# Outputs:   progress on stderr
# Returns:   0 found, 1 could not be found or installed
#######################################
lib::results_init() {
  if [[ -n "${SSKJ_RESULTS_CMD[0]:-}" ]]; then
    return 0
  fi
  local root venv_bin
  root="$(lib::repo_root)"
  venv_bin="${root}/.venv/bin/sskj-results"
  if [[ -n "${SSKJ_RESULTS_BIN:-}" ]]; then
    SSKJ_RESULTS_CMD=("${SSKJ_RESULTS_BIN}")
  elif command -v sskj-results >/dev/null 2>&1; then
    SSKJ_RESULTS_CMD=("$(command -v sskj-results)")
  elif [[ -x "${venv_bin}" ]]; then
    SSKJ_RESULTS_CMD=("${venv_bin}")
  else
    lib::info "sskj-results not found; creating ${root}/.venv and installing the package (takes a few minutes)"
    if ! python3 -m venv "${root}/.venv" >&2; then
      lib::err "python3 -m venv ${root}/.venv failed"
      return 1
    fi
    lib::info "pip install -e ${root}"
    if ! "${root}/.venv/bin/pip" install -e "${root}" >&2; then
      lib::err "pip install -e ${root} failed"
      return 1
    fi
    SSKJ_RESULTS_CMD=("${venv_bin}")
  fi
  return 0
}

#######################################
# Run `sskj-results ARGS...`.
# Arguments: sskj-results arguments
# Outputs:   whatever the command prints (callers send it to stderr unless
#            they read it, so that stdout stays for DRY_RUN command lines)
# Returns:   the command's exit status (1 if it cannot be resolved)
#######################################
lib::results() {
  lib::results_init || return 1
  "${SSKJ_RESULTS_CMD[@]}" "$@"
}

#######################################
# Tell whether nothing listens on a TCP port.
# Arguments: $1 port; $2 host (default 127.0.0.1)
# Returns:   0 free, 1 in use, 2 misuse
#######################################
lib::port_is_free() {
  local port="${1:-}" host="${2:-127.0.0.1}"
  if [[ ! "${port}" =~ ^[0-9]+$ ]]; then
    lib::err "lib::port_is_free: invalid port '${port}'"
    return 2
  fi
  if command -v ss >/dev/null 2>&1; then
    if ss -Hltn "sport = :${port}" 2>/dev/null | grep -q .; then
      return 1
    fi
  fi
  # A successful connect means something is listening.
  # shellcheck disable=SC2016  # expanded by the inner bash
  if timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "${host}" "${port}" 2>/dev/null; then
    return 1
  fi
  return 0
}

#######################################
# Wait until a port is free (after a server stopped).
# Arguments: $1 port; $2 timeout seconds (default 30)
# Returns:   0 free, 1 still in use at the deadline
#######################################
lib::wait_port_free() {
  local port="$1" timeout_s="${2:-30}" waited=0
  until lib::port_is_free "${port}"; do
    if ((waited >= timeout_s)); then
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  return 0
}

#######################################
# Tell whether a process is alive (zombies count as dead).
# Arguments: $1 pid
# Returns:   0 alive, 1 dead or no pid
#######################################
lib::pid_alive() {
  local pid="${1:-}" stat
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  stat="$(ps -o stat= -p "${pid}" 2>/dev/null)" || return 1
  [[ -n "${stat}" && "${stat}" != Z* ]]
}

#######################################
# Print every descendant pid of a process (children before grandchildren).
# Arguments: $1 pid
# Outputs:   pids, one per line
# Returns:   0
#######################################
_lib::descendants() {
  local kid
  for kid in $(pgrep -P "$1" 2>/dev/null); do
    printf '%s\n' "${kid}"
    _lib::descendants "${kid}"
  done
  return 0
}

#######################################
# Stop a process and its whole tree: TERM to its process group (when it
# leads one) and to every descendant, wait up to GRACE seconds, then KILL
# what is left. Reaps the process when it is a child of this shell.
# Arguments: $1 pid; $2 grace seconds (default 30)
# Outputs:   progress on stderr
# Returns:   0 (also when the process was already gone), 2 misuse
#######################################
lib::stop_tree() {
  local pid="${1:-}" grace="${2:-30}"
  if [[ ! "${pid}" =~ ^[0-9]+$ ]]; then
    lib::err "lib::stop_tree: invalid pid '${pid}'"
    return 2
  fi
  local -a pids=("${pid}")
  local p pgid waited=0 any
  mapfile -t -O 1 pids < <(_lib::descendants "${pid}")
  pids[0]="${pid}"
  pgid="$(ps -o pgid= -p "${pid}" 2>/dev/null | tr -d ' ')"
  if [[ "${pgid}" == "${pid}" ]]; then
    kill -TERM -- "-${pid}" 2>/dev/null || true
  fi
  for p in "${pids[@]}"; do
    kill -TERM "${p}" 2>/dev/null || true
  done
  while :; do
    any=0
    for p in "${pids[@]}"; do
      if lib::pid_alive "${p}"; then
        any=1
        break
      fi
    done
    ((any == 0)) && break
    if ((waited >= grace * 10)); then
      lib::warn "process tree of ${pid} still alive after ${grace}s; sending KILL"
      if [[ "${pgid}" == "${pid}" ]]; then
        kill -KILL -- "-${pid}" 2>/dev/null || true
      fi
      for p in "${pids[@]}"; do
        kill -KILL "${p}" 2>/dev/null || true
      done
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  wait "${pid}" 2>/dev/null || true
  return 0
}

#######################################
# Run a command in its own process group in the background and wait for it,
# so that a trapped signal interrupts the wait at once; the handler can stop
# the child through LIB_CHILD_PID.
# Arguments: $1 log file (stdout+stderr, '-' to inherit); $2.. command
# Globals:   LIB_CHILD_PID (written while running)
# Returns:   the command's exit status
#######################################
lib::run_child() {
  local log="$1" rc=0
  shift
  if [[ "${log}" == "-" ]]; then
    setsid -w "$@" </dev/null &
  else
    setsid -w "$@" >>"${log}" 2>&1 </dev/null &
  fi
  LIB_CHILD_PID=$!
  wait "${LIB_CHILD_PID}" || rc=$?
  LIB_CHILD_PID=""
  return "${rc}"
}

#######################################
# Start a server in its own session/process group, output to
# <log_dir>/<service>_<YYYYmmdd_HHMMSS>.log (first line: the command).
# Arguments: $1 service name; $2 log directory; $3.. command
# Globals:   LIB_SERVER_PID, LIB_SERVER_LOG (written)
# Outputs:   progress on stderr
# Returns:   0 started, 1 failure, 2 misuse
#######################################
lib::start_server() {
  if (($# < 3)); then
    lib::err "usage: lib::start_server SERVICE LOG_DIR CMD..."
    return 2
  fi
  local service="$1" log_dir="$2"
  shift 2
  mkdir -p "${log_dir}" || return 1
  LIB_SERVER_LOG="${log_dir}/${service}_$(date '+%Y%m%d_%H%M%S').log"
  printf '# %s\n' "$(lib::quote_cmd "$@")" >>"${LIB_SERVER_LOG}"
  lib::info "starting ${service} (log ${LIB_SERVER_LOG}): $(lib::quote_cmd "$@")"
  setsid -w "$@" >>"${LIB_SERVER_LOG}" 2>&1 </dev/null &
  LIB_SERVER_PID=$!
  return 0
}

#######################################
# Poll GET <base_url><health path> until it answers, the timeout passes, or
# the server process dies (then fail at once); on failure the log tail is
# printed (`sskj-results wait-health`). With a port, healthy also means
# that every socket listening there belongs to the server's process tree
# (or carries the tag): another holder fails in one line naming the port
# and the holder, also when the server died because it could not bind.
# Arguments: $1 base url; $2 server pid; $3 timeout seconds; $4 server log;
#            $5 health path (the engine row's health_path; empty: /health);
#            $6 port (optional); $7 SSKJ_SERVER_TAG of a container (optional)
# Outputs:   progress and log tail on stderr
# Returns:   0 healthy, 1 died, timed out or not our engine, 2 misuse
#######################################
lib::wait_for_health() {
  if (($# < 4 || $# > 7)); then
    lib::err "usage: lib::wait_for_health BASE_URL PID TIMEOUT_S LOG [HEALTH_PATH [PORT [TAG]]]"
    return 2
  fi
  local url="$1${5:-/health}"
  local -a owner=()
  [[ -z "${6:-}" ]] || owner+=(--port "$6")
  [[ -z "${7:-}" ]] || owner+=(--tag "$7")
  lib::info "waiting for ${url} (timeout $3s)"
  lib::results wait-health "${url}" --pid "$2" --timeout "$3" --log "$4" --tail "${LOG_TAIL_LINES:-40}" \
    "${owner[@]}"
}

#######################################
# Send a signal to every process of a container that carries
# SSKJ_SERVER_TAG=<tag> in its environment (the server started by
# `docker exec --env SSKJ_SERVER_TAG=... ` and all its children); with signal
# 0 only test for them. With NODES > 1 (a multi-node engine: one rank's
# server in the container of every node) on every node of the job, by srun.
# Arguments: $1 container; $2 tag; $3 signal name or 0; $4 nodes (default 1)
# Returns:   0 some process matched (on some node), 1 none matched
#######################################
lib::container_signal_tagged() {
  local container="$1" tag="$2" sig="$3" nodes="${4:-1}"
  # Fixed script text; tag and signal are passed as positional parameters.
  # shellcheck disable=SC2016  # expanded by the container's sh
  local script='tag="$1"; sig="$2"
for d in /proc/[0-9]*; do
  pid="${d#/proc/}"
  [ "$pid" = "$$" ] && continue
  if tr "\000" "\n" < "$d/environ" 2>/dev/null | grep -qx "SSKJ_SERVER_TAG=$tag"; then
    kill "-$sig" "$pid" 2>/dev/null && echo "sskj-tagged $pid"
  fi
done
exit 0'
  local -a on=()
  if [[ "${nodes}" =~ ^[0-9]+$ ]] && ((nodes > 1)); then
    # platform keys named SLURM_* would be read by srun as its own options (as in multinode.sh)
    on=(env -u SLURM_GRES -u SLURM_MEM -u SLURM_TIME -u SLURM_PARTITION
      srun --overlap --nodes="${nodes}" --ntasks="${nodes}" --ntasks-per-node=1 --job-name=sskj-stop)
  fi
  "${on[@]}" docker exec "${container}" sh -c "${script}" sskj-stop "${tag}" "${sig}" 2>/dev/null | grep -q '^sskj-tagged '
}

#######################################
# Stop the server started by lib::start_server: its host process tree, then
# (for docker exec servers) the tagged processes inside the container, of
# every node for a multi-node engine (LIB_SERVER_NODES): stopping the srun
# ends the `docker exec` clients only, never the servers inside.
# Globals:   LIB_SERVER_PID (read, cleared); LIB_SERVER_CONTAINER,
#            LIB_SERVER_TAG, LIB_SERVER_NODES (read, optional); STOP_GRACE_S (read)
# Outputs:   progress on stderr
# Returns:   0
#######################################
lib::stop_server() {
  local grace="${STOP_GRACE_S:-30}" waited=0 nodes="${LIB_SERVER_NODES:-1}"
  if [[ -n "${LIB_SERVER_PID:-}" ]]; then
    lib::info "stopping server (pid ${LIB_SERVER_PID})"
    lib::stop_tree "${LIB_SERVER_PID}" "${grace}"
  fi
  if [[ -n "${LIB_SERVER_CONTAINER:-}" && -n "${LIB_SERVER_TAG:-}" ]]; then
    if lib::container_signal_tagged "${LIB_SERVER_CONTAINER}" "${LIB_SERVER_TAG}" TERM "${nodes}"; then
      while lib::container_signal_tagged "${LIB_SERVER_CONTAINER}" "${LIB_SERVER_TAG}" 0 "${nodes}"; do
        if ((waited >= grace)); then
          lib::warn "server in container ${LIB_SERVER_CONTAINER} still alive after ${grace}s; sending KILL"
          lib::container_signal_tagged "${LIB_SERVER_CONTAINER}" "${LIB_SERVER_TAG}" KILL "${nodes}" || true
          break
        fi
        sleep 1
        waited=$((waited + 1))
      done
    fi
  fi
  LIB_SERVER_PID=""
  return 0
}

#######################################
# Fill LIB_LAUNCHER with the prefix that runs the engine's Python (natively
# `env K=V... <python>` from the engine table's variable, e.g. SGLANG_PYTHON,
# else ENGINE_PYTHON; on docker platforms `docker exec --env K=V...
# CONTAINER_NAME CONTAINER_PYTHON`; DEVICES first), spelled by
# `sskj-results server-cmd ENGINE --kind launcher` (sskj_results/run/launch.py).
# Arguments: $1 engine; $2.. KEY=VALUE environment for the server
# Globals:   the run's settings (read, from the environment);
#            LIB_LAUNCHER (written, array)
# Returns:   0 ok, 1 no python configured, unknown engine or bad KEY=VALUE
#######################################
lib::engine_launcher() {
  local engine="${1:-}" rc=0
  shift || true
  lib::results_init || return 1
  # shellcheck disable=SC2034  # read by the caller
  mapfile -d '' -t LIB_LAUNCHER < <("${SSKJ_RESULTS_CMD[@]}" server-cmd "${engine}" --kind launcher -- "$@")
  wait "$!" || rc=$?
  return "$((rc != 0))"
}

#######################################
# Start sampling the accelerator into <stem>.csv (nvidia-smi, CSV with
# header) or <stem>.xpu-smi.log (xpu-smi text snapshots); nothing on CPU.
# Arguments: $1 output path without extension
# Globals:   ACCEL_SAMPLER (nvidia-smi | xpu-smi | none), SAMPLE_INTERVAL_MS
#            (read); LIB_SAMPLER_PID (written)
# Returns:   0
#######################################
lib::start_accel_sampler() {
  local stem="$1" interval_ms="${SAMPLE_INTERVAL_MS:-1000}"
  LIB_SAMPLER_PID=""
  case "${ACCEL_SAMPLER:-none}" in
    nvidia-smi)
      command -v nvidia-smi >/dev/null 2>&1 || return 0
      setsid -w nvidia-smi \
        --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,power.draw \
        --format=csv,nounits -lms "${interval_ms}" >"${stem}.csv" 2>/dev/null </dev/null &
      LIB_SAMPLER_PID=$!
      ;;
    xpu-smi)
      command -v xpu-smi >/dev/null 2>&1 || return 0
      # Fixed script text; the interval is a positional parameter.
      # shellcheck disable=SC2016  # expanded by the inner bash
      setsid -w bash -c 'while :; do printf "### %s\n" "$(date "+%Y-%m-%dT%H:%M:%S%z")"; xpu-smi; sleep "$1"; done' \
        sskj-xpu-sampler "$((interval_ms / 1000 > 0 ? interval_ms / 1000 : 1))" \
        >"${stem}.xpu-smi.log" 2>&1 </dev/null &
      LIB_SAMPLER_PID=$!
      ;;
    *) ;;
  esac
  return 0
}

#######################################
# Stop the accelerator sampler started by lib::start_accel_sampler.
# Globals:   LIB_SAMPLER_PID (read, cleared)
# Returns:   0
#######################################
lib::stop_accel_sampler() {
  if [[ -n "${LIB_SAMPLER_PID:-}" ]]; then
    lib::stop_tree "${LIB_SAMPLER_PID}" 2
  fi
  LIB_SAMPLER_PID=""
  return 0
}

