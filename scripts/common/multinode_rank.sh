#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
#
# One rank of a multi-node engine: run by `srun` (one task per node, see
# multinode.sh) on every node of the job. Sets NODE_RANK from the node's
# index in the allocation and DIST_INIT_ADDR, then becomes the experiment's
# start_server.sh for the phase (which execs the engine with its multi-node
# flags).
#
# Usage: multinode_rank.sh EXPERIMENT_DIR PHASE_SPEC HEAD_ADDR:PORT
set -euo pipefail

if (($# != 3)); then
  printf 'usage: multinode_rank.sh EXPERIMENT_DIR PHASE_SPEC HEAD_ADDR:PORT\n' >&2
  exit 2
fi
if [[ ! "${SLURM_NODEID:-}" =~ ^[0-9]+$ ]]; then
  printf 'multinode_rank.sh: SLURM_NODEID is not set (run it under srun)\n' >&2
  exit 2
fi
export NODE_RANK="${SLURM_NODEID}" DIST_INIT_ADDR="$3"
printf '[rank %s on %s (%s)] dist-init %s\n' "${NODE_RANK}" "${SLURMD_NODENAME:-?}" "$(hostname)" "${DIST_INIT_ADDR}" >&2
exec bash "$1/start_server.sh" "$2"
