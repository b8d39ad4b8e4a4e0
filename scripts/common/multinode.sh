# shellcheck shell=bash source-path=SCRIPTDIR
#
# Engines that span nodes, inside a Slurm allocation (docs/CLUSTER.md).
#
# With NNODES=N > 1 the run loop starts the phase's server with `srun` (one
# task per node of the job) instead of directly: every task runs
# multinode_rank.sh, which runs the experiment's start_server.sh with
# NODE_RANK (= SLURM_NODEID) and DIST_INIT_ADDR (<head address>:DIST_INIT_PORT)
# set; the shared command builders then add the engine's own multi-node
# flags (sskj_results/run/launch.py):
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
# Fill BENCH_SERVER_CMD with the phase's server command: on one node the
# experiment's command (bench::get_server_cmd); with NNODES > 1 the srun
# launch of every rank, and MULTINODE_RECORD_ARGS with what to record: the
# command of every rank (config rank<i>_server_args), the dist-init address
# and the nodes (metadata nodes, gpus_per_node, node_names, node_hostnames;
# hardware then reads "<N> nodes x <per-node hardware>"). Outside an
# allocation only a dry run proceeds (head address HEAD_NODE_ADDR).
# Arguments: $1 experiment dir; $2 phase spec
# Globals:   NNODES PORT DIST_INIT_PORT MULTINODE_HEAD_ADDR GPUS_PER_NODE (read);
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
  local head addr port="${DIST_INIT_PORT:-29500}" i line
  local -a found=() nodes=() hostnames=()
  # head address, then name and host name of each node (sskj_results/run/allocation.py)
  mapfile -d '' -t found < <(lib::results slurm-nodes "${NNODES}")
  wait "$!" || return 1
  if ((${#found[@]} > 0)); then
    head="${found[0]}"
    for ((i = 0; i < NNODES; i++)); do
      nodes+=("${found[2 * i + 1]}")
      hostnames+=("${found[2 * i + 2]}")
    done
  elif lib::is_dry_run; then
    head="HEAD_NODE_ADDR"
    for ((i = 0; i < NNODES; i++)); do
      nodes+=("node${i}")
      hostnames+=("node${i}")
    done
  else
    lib::err "NNODES=${NNODES} needs a Slurm allocation of ${NNODES} nodes: bash scripts/common/submit.sh --nodes ${NNODES} ${exp_dir}"
    return 1
  fi
  addr="${MULTINODE_HEAD_ADDR:-${head}}:${port}"
  for ((i = 0; i < NNODES; i++)); do
    NODE_RANK="${i}" DIST_INIT_ADDR="${addr}" bench::get_server_cmd "${exp_dir}" "${spec}" || return 1
    line="$(lib::quote_cmd "${BENCH_SERVER_CMD[@]}")"
    MULTINODE_RECORD_ARGS+=(--config "rank${i}_server_args=${line}")
    if lib::is_dry_run; then
      printf '# rank %s on %s (%s), dist-init %s:\n%s\n' "${i}" "${nodes[i]}" "${hostnames[i]}" "${addr}" "${line}"
    fi
  done
  local names_csv hosts_csv
  names_csv="$(IFS=,; printf '%s' "${nodes[*]}")"
  hosts_csv="$(IFS=,; printf '%s' "${hostnames[*]}")"
  MULTINODE_RECORD_ARGS+=(--config "dist_init_addr=${addr}" --meta "nodes=${NNODES}"
    --meta "gpus_per_node=${GPUS_PER_NODE:-}"
    --meta "node_names=${names_csv}" --meta "node_hostnames=${hosts_csv}")
  # Platform keys named SLURM_* would be read by srun as its own options.
  BENCH_SERVER_CMD=(env -u SLURM_GRES -u SLURM_MEM -u SLURM_TIME -u SLURM_PARTITION
    srun --overlap --nodes="${NNODES}" --ntasks="${NNODES}" --ntasks-per-node=1
    --kill-on-bad-exit=1 --job-name="sskj-engine-${PHASE_NAME:-engine}"
    bash "${_BENCH_LIB_DIR}/multinode_rank.sh" "${exp_dir}" "${spec}" "${addr}")
  return 0
}
