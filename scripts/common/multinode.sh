# shellcheck shell=bash source-path=SCRIPTDIR
#
# Engines that span nodes, inside a Slurm allocation (docs/CLUSTER.md).
#
# With NNODES=N > 1 the run loop starts the phase's server with `srun` (one
# task per node of the job) instead of directly: every task runs
# multinode_rank.sh, which runs the experiment's start_server.sh with
# NODE_RANK (= SLURM_NODEID) and DIST_INIT_ADDR (<head address>:DIST_INIT_PORT)
# set; the shared command builders then add the engine's own multi-node
# flags (sskj_results/launch.py):
#   SGLang: --nnodes N --node-rank R --dist-init-addr HEAD:PORT
#   vLLM:   --nnodes N --node-rank R --master-addr HEAD --master-port PORT,
#           and --headless on ranks > 0 (multiprocessing, no Ray)
# Rank 0 runs on the head node (the batch script's node), which serves the
# API: health checks and the client stay there. Stopping the srun stops
# every rank. Sourcing this file only defines functions (multinode::*).

#######################################
# Tell whether the engine spans several nodes.
# Globals:   NNODES (read)
# Returns:   0 NNODES > 1, 1 otherwise
#######################################
multinode::enabled() {
  local n="${NNODES:-1}"
  [[ "${n}" =~ ^[0-9]+$ ]] && ((n > 1))
}

#######################################
# Print the node names of the allocation, one per line (node-rank order).
# Globals:   SLURM_JOB_NODELIST (read)
# Outputs:   names on stdout
# Returns:   0 ok, 1 not in an allocation or scontrol failed
#######################################
multinode::nodes() {
  [[ -n "${SLURM_JOB_NODELIST:-}" ]] || return 1
  scontrol show hostnames "${SLURM_JOB_NODELIST}"
}

#######################################
# Print a field of a node from `scontrol show node` (e.g. NodeAddr).
# Arguments: $1 node; $2 field
# Outputs:   the value on stdout
# Returns:   0 found, 1 not found
#######################################
multinode::node_field() {
  local node="$1" field="$2" word
  local -a words=()
  read -r -a words < <(scontrol show node -o "${node}" 2>/dev/null) || true
  for word in "${words[@]}"; do
    if [[ "${word}" == "${field}="* ]]; then
      printf '%s' "${word#*=}"
      return 0
    fi
  done
  return 1
}

#######################################
# Fill BENCH_SERVER_CMD with the phase's server command: on one node the
# experiment's command (bench::get_server_cmd); with NNODES > 1 the srun
# launch of every rank, and MULTINODE_RECORD_ARGS with what to record: the
# command of every rank (config rank<i>_server_args), the dist-init address
# and the nodes (metadata nodes, node_names, node_hostnames). Outside an
# allocation only a dry run proceeds (head address HEAD_NODE_ADDR).
# Arguments: $1 experiment dir; $2 phase spec
# Globals:   NNODES PORT DIST_INIT_PORT MULTINODE_HEAD_ADDR (read);
#            BENCH_SERVER_CMD MULTINODE_RECORD_ARGS (written)
# Outputs:   with DRY_RUN=1 and NNODES > 1, each rank's command on stdout
# Returns:   0 ok, 1 failure
#######################################
multinode::server_cmd() {
  local exp_dir="$1" spec="$2"
  MULTINODE_RECORD_ARGS=()
  if ! multinode::enabled; then
    bench::get_server_cmd "${exp_dir}" "${spec}"
    return
  fi
  local head addr port="${DIST_INIT_PORT:-29500}" i line host
  local -a nodes=() hostnames=()
  if mapfile -t nodes < <(multinode::nodes 2>/dev/null) && ((${#nodes[@]} > 0)); then
    if ((${#nodes[@]} < NNODES)); then
      lib::err "NNODES=${NNODES} but the allocation has ${#nodes[@]} node(s) (${SLURM_JOB_NODELIST}); submit with --nodes ${NNODES}"
      return 1
    fi
    nodes=("${nodes[@]:0:NNODES}")
    head="$(multinode::node_field "${nodes[0]}" NodeAddr)" || head="${nodes[0]}"
  elif lib::is_dry_run; then
    head="HEAD_NODE_ADDR"
    nodes=()
    for ((i = 0; i < NNODES; i++)); do
      nodes+=("node${i}")
    done
  else
    lib::err "NNODES=${NNODES} needs a Slurm allocation of ${NNODES} nodes: bash scripts/common/submit.sh --nodes ${NNODES} ${exp_dir}"
    return 1
  fi
  addr="${MULTINODE_HEAD_ADDR:-${head}}:${port}"
  for ((i = 0; i < NNODES; i++)); do
    host="$(multinode::node_field "${nodes[i]}" NodeHostname 2>/dev/null)" || host="${nodes[i]}"
    hostnames+=("${host}")
    NODE_RANK="${i}" DIST_INIT_ADDR="${addr}" bench::get_server_cmd "${exp_dir}" "${spec}" || return 1
    line="$(lib::quote_cmd "${BENCH_SERVER_CMD[@]}")"
    MULTINODE_RECORD_ARGS+=(--config "rank${i}_server_args=${line}")
    if lib::is_dry_run; then
      printf '# rank %s on %s (%s), dist-init %s:\n%s\n' "${i}" "${nodes[i]}" "${host}" "${addr}" "${line}"
    fi
  done
  local names_csv hosts_csv
  names_csv="$(IFS=,; printf '%s' "${nodes[*]}")"
  hosts_csv="$(IFS=,; printf '%s' "${hostnames[*]}")"
  MULTINODE_RECORD_ARGS+=(--config "dist_init_addr=${addr}" --meta "nodes=${NNODES}"
    --meta "node_names=${names_csv}" --meta "node_hostnames=${hosts_csv}")
  # Platform keys named SLURM_* would be read by srun as its own options.
  BENCH_SERVER_CMD=(env -u SLURM_GRES -u SLURM_MEM -u SLURM_TIME -u SLURM_PARTITION
    srun --overlap --nodes="${NNODES}" --ntasks="${NNODES}" --ntasks-per-node=1
    --kill-on-bad-exit=1 --job-name="sskj-engine-${PHASE_NAME:-engine}"
    bash "${_BENCH_LIB_DIR}/multinode_rank.sh" "${exp_dir}" "${spec}" "${addr}")
  return 0
}
