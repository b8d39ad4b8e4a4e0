#!/usr/bin/env bash
#
# Copy a platform's runtime patches into the engine container, apply them,
# and record every patch (file, sha256, package, target, status) in the run's
# results.json as config.patches (a JSON string).
#
# Usage: apply_patches.sh RUN_DIR [--listing FILE [--recorded]]
#
#   --listing FILE  the series as `sskj-results patches PATCH_ROOT` lists it
#                   (the run loop has it from `phase-begin --patches`)
#   --recorded      config.patches is already recorded (phase-begin does that
#                   when nothing will be applied: a dry run or an empty series)
#
# Environment (normally from platforms/<chip>.env, see platform.sh):
#   CONTAINER_NAME, CONTAINER_PYTHON, PATCH_ROOT (required)
#   CONTAINER_PATCH_DIR  where patches are copied in the container
#                        (default /tmp/sskj_patches)
#   DRY_RUN=1            print the docker commands instead of running them
#
# PATCH_ROOT/series lists the patches in order, one per line:
#   <patch file in PATCH_ROOT> <python package it patches>
# (read and recorded by `sskj-results patches`, sskj_results/run/patches.py).
# Each patch is a unified diff with paths relative to the directory that
# contains the package (site-packages), applied with `patch -p1`. A patch
# that is already applied (reverse dry run succeeds) is left as it is.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

#######################################
# Run a docker command, or print it with DRY_RUN=1.
# Arguments: the command
# Outputs:   the command's output; with DRY_RUN the quoted command
# Returns:   the command's status (0 in dry run)
#######################################
run_or_print() {
  if lib::is_dry_run; then
    lib::print_cmd "$@"
    return 0
  fi
  "$@"
}

#######################################
# Print the site-packages directory that holds a package in the container.
# Arguments: $1 package
# Outputs:   directory on stdout
# Returns:   0 found, 1 not found
#######################################
package_parent() {
  docker exec "${CONTAINER_NAME}" "${CONTAINER_PYTHON}" -c '
import importlib.util, os, sys
spec = importlib.util.find_spec(sys.argv[1])
if spec is None or spec.origin is None:
    sys.exit("package not found: " + sys.argv[1])
path = spec.origin
if os.path.basename(path) == "__init__.py":
    path = os.path.dirname(path)
print(os.path.dirname(path))
' "$1"
}

main() {
  local usage="usage: apply_patches.sh RUN_DIR [--listing FILE [--recorded]]"
  if (($# < 1)); then
    lib::err "${usage}"
    return 2
  fi
  local run_dir="$1" listing="" listing_file="" recorded=0 file package sha dry_target target status
  shift
  while (($# > 0)); do
    case "$1" in
      --listing)
        (($# >= 2)) || { lib::err "${usage}"; return 2; }
        listing_file="$2"
        shift 2
        ;;
      --recorded) recorded=1 && shift ;;
      *) lib::err "${usage}" && return 2 ;;
    esac
  done
  lib::require_env CONTAINER_NAME CONTAINER_PYTHON PATCH_ROOT || return 1
  local dest="${CONTAINER_PATCH_DIR:-/tmp/sskj_patches}"
  local -a record=(patches "${PATCH_ROOT}" --record "${run_dir}")
  if [[ -n "${listing_file}" ]]; then
    listing="$(<"${listing_file}")" || return 1
  else
    listing="$(lib::results patches "${PATCH_ROOT}")" || return 1
  fi
  if [[ -z "${listing}" ]]; then
    lib::info "no patches listed in ${PATCH_ROOT}/series"
    ((recorded == 1)) || lib::results "${record[@]}" >&2
    return 0
  fi
  run_or_print docker exec "${CONTAINER_NAME}" mkdir -p "${dest}"
  while read -r file package sha dry_target; do
    run_or_print docker cp "${PATCH_ROOT}/${file}" "${CONTAINER_NAME}:${dest}/${file}"
    if lib::is_dry_run; then
      target="${dry_target}"
      lib::print_cmd docker exec "${CONTAINER_NAME}" patch -p1 --forward --batch -d "${target}" -i "${dest}/${file}"
      status="dry_run"
    else
      target="$(package_parent "${package}")" || {
        lib::err "cannot locate package ${package} in container ${CONTAINER_NAME}"
        return 1
      }
      if docker exec "${CONTAINER_NAME}" patch -p1 -R --dry-run --force -s -d "${target}" -i "${dest}/${file}" >/dev/null 2>&1; then
        status="already_applied"
      elif docker exec "${CONTAINER_NAME}" patch -p1 --forward --batch -d "${target}" -i "${dest}/${file}" >&2; then
        status="applied"
      else
        lib::err "patch ${file} does not apply to ${package} in ${CONTAINER_NAME} (${target})"
        return 1
      fi
      lib::info "patch ${file} (${package}): ${status}, sha256 ${sha}"
    fi
    record+=(--result "${file}=${status}=${target}")
  done <<<"${listing}"
  ((recorded == 1)) || lib::results "${record[@]}" >&2
}

main "$@"
