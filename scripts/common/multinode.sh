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
# hardware then reads "<N> nodes x <per-node hardware>"). The nodes, the
# address and the srun command are planned by `sskj-results slurm-nodes
# --launch` (sskj_results/run/allocation.py); outside an allocation only a
# dry run proceeds (head address HEAD_NODE_ADDR).
# Arguments: $1 experiment dir; $2 phase spec
# Globals:   NNODES PORT DIST_INIT_PORT MULTINODE_HEAD_ADDR GPUS_PER_NODE (read);
#            BENCH_SERVER_CMD MULTINODE_RECORD_ARGS (written)
# Outputs:   with DRY_RUN=1 and NNODES > 1, each rank's command on stdout
# Returns:   0 ok, 1 failure
#######################################
multinode::server_cmd() {
  local exp_dir="$1" spec="$2" i line
  MULTINODE_RECORD_ARGS=()
  if ! multinode::enabled; then
    bench::get_server_cmd "${exp_dir}" "${spec}"
    return
  fi
  lib::read_records "${SSKJ_RESULTS_CMD[@]}" slurm-nodes "${NNODES}" \
    --launch "${exp_dir}" "${spec}" "${_BENCH_LIB_DIR}/multinode_rank.sh" || return 1
  for ((i = 0; i < NNODES; i++)); do
    NODE_RANK="${i}" DIST_INIT_ADDR="${MULTINODE_ADDR}" bench::get_server_cmd "${exp_dir}" "${spec}" || return 1
    line="$(lib::quote_cmd "${BENCH_SERVER_CMD[@]}")"
    MULTINODE_RECORD_ARGS+=(--config "rank${i}_server_args=${line}")
    if lib::is_dry_run; then
      printf '# rank %s on %s (%s), dist-init %s:\n%s\n' "${i}" "${MULTINODE_NODES[i]}" "${MULTINODE_HOSTS[i]}" \
        "${MULTINODE_ADDR}" "${line}"
    fi
  done
  MULTINODE_RECORD_ARGS+=("${MULTINODE_RECORDS[@]}")
  BENCH_SERVER_CMD=("${MULTINODE_SRUN[@]}")
  return 0
}
