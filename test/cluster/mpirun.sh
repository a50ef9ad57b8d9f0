#!/bin/bash
# loom: run an MPI program on the emulated cluster (see cluster.sh, docs/dev/cluster.md).
#
#   mpirun.sh [--nodes N] [--ppn K | --map K0,K1,...] [--rr] [--ob1 | --ucx]
#             [--timeout S] [--loom-dir DIR] [--dry-run] [MPIRUN OPTIONS...] -- PROGRAM [ARGS...]
#
#   --nodes N     use nodes loomnode0..N-1 (default: every node of the cluster)
#   --ppn K       K ranks on every node (default 1)
#   --map LIST    ranks per node, e.g. 1,3,2 (uneven nodes; sets N)
#   --hosts LIST  these nodes instead of loomnode0..N-1, e.g. loomnode3,loomnode9,loomnode4
#                 (a sub-communicator of a torus; sets N unless --map does)
#   --rr          round-robin placement: rank i on the (i mod N)-th node that still
#                 has room, so node-consecutive ranks are not neighbours; default
#                 is consecutive (node 0 gets ranks 0..K0-1, ...)
#   --ob1         pml ob1, btl self,vader,tcp (vader in a node, tcp between; on a cluster
#                 made with --torus, tcp over the torus links, btl_tcp_if_include tor0) -- default
#   --ucx         pml ucx over self,sm,tcp (cl0 between nodes)
#   --timeout S   kill the job after S seconds (default $LOOM_CLUSTER_TIMEOUT or 300);
#                 exit status 124 then, after one line per rank thread saying where
#                 it was stuck (test/deadline.sh)
#   --loom-dir D  directory of mca_coll_loom.so (default $LOOM_COMPONENT_DIR, else the
#                 build tree's .libs); ignored when OMPI_MCA_mca_base_component_path is set
#   --dry-run     print the hostfile and the mpirun command, run nothing
# Anything else before `--` goes to mpirun unchanged (e.g. --mca coll ^loom, -x VAR);
# an --mca of pml, btl, btl_tcp_if_include, pml_ucx_* or mpi_yield_when_idle replaces
# this script's value.
#
# The ranks see LOOM_CLUSTER_NODES (nodes used) and LOOM_CLUSTER_PLACEMENT (the node
# of each rank, comma-separated, in rank order); test/cluster/smoke checks them.
# Placement is exact: a hostfile with one line per rank and the sequential mapper.
# On failure or timeout, processes left in the nodes used are killed (by PID): jobs
# on one cluster are meant to run one at a time.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${LOOM_CLUSTER_STATE:-/run/loom-cluster}

die() { echo "mpirun.sh: $*" >&2; exit 2; }

nodes="" ppn="" map="" hosts="" rr=0 pml=ob1 dry=0
tmo=${LOOM_CLUSTER_TIMEOUT:-300}
loomdir=${LOOM_COMPONENT_DIR:-}
extra=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case "$1" in
    --nodes) nodes=${2:?}; shift 2 ;;
    --ppn) ppn=${2:?}; shift 2 ;;
    --map) map=${2:?}; shift 2 ;;
    --hosts) hosts=${2:?}; shift 2 ;;
    --rr) rr=1; shift ;;
    --ob1) pml=ob1; shift ;;
    --ucx) pml=ucx; shift ;;
    --timeout) tmo=${2:?}; shift 2 ;;
    --loom-dir) loomdir=${2:?}; shift 2 ;;
    --dry-run) dry=1; shift ;;
    *) extra+=("$1"); shift ;;
    esac
done
[ "${1:-}" = -- ] || die "missing '-- PROGRAM [ARGS]'"
shift
[ $# -ge 1 ] || die "no PROGRAM after --"
prog=$1

[ -f "$STATE/nodes" ] || die "no cluster is up (run: $here/cluster.sh up N)"
have=$(cat "$STATE/nodes")
subnet=$(cat "$STATE/subnet")

# ranks per node
counts=()
if [ -n "$map" ]; then
    [ -z "$ppn" ] || die "--ppn and --map are exclusive"
    IFS=, read -r -a counts <<<"$map"
    [ -z "$nodes" ] || [ "$nodes" = "${#counts[@]}" ] || die "--nodes $nodes disagrees with --map $map"
    nodes=${#counts[@]}
else
    if [ -z "$nodes" ] && [ -n "$hosts" ]; then
        nodes=$(awk -F, '{print NF}' <<<"$hosts")
    fi
    nodes=${nodes:-$have}
    ppn=${ppn:-1}
    for ((i = 0; i < nodes; i++)); do counts+=("$ppn"); done
fi
[[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] || die "bad node count $nodes"
[ "$nodes" -le "$have" ] || die "$nodes nodes asked, the cluster has $have (cluster.sh up $nodes)"
np=0
for c in "${counts[@]}"; do
    [[ "$c" =~ ^[0-9]+$ ]] && [ "$c" -ge 1 ] || die "bad ranks-per-node count '$c'"
    np=$((np + c))
done

# the node of every rank
place=()
if [ $rr = 0 ]; then
    for ((i = 0; i < nodes; i++)); do
        for ((k = 0; k < counts[i]; k++)); do place+=("loomnode$i"); done
    done
else
    left=("${counts[@]}")
    while [ ${#place[@]} -lt $np ]; do
        for ((i = 0; i < nodes; i++)); do
            if [ "${left[i]}" -gt 0 ]; then place+=("loomnode$i"); left[i]=$((left[i] - 1)); fi
        done
    done
fi
# --hosts: the ranks on these nodes instead of loomnode0..N-1 (the i-th listed node
# stands for loomnode<i> above), e.g. a random subset of a torus
if [ -n "$hosts" ]; then
    IFS=, read -r -a hl <<<"$hosts"
    [ "${#hl[@]}" = "$nodes" ] || die "--hosts lists ${#hl[@]} nodes, the placement has $nodes"
    for ((i = 0; i < ${#place[@]}; i++)); do
        k=${place[i]#loomnode}
        [[ "${hl[k]}" =~ ^loomnode[0-9]+$ ]] && [ "${hl[k]#loomnode}" -lt "$have" ] || die "--hosts: no node ${hl[k]}"
        place[i]=${hl[k]}
    done
fi
placement=$(IFS=,; echo "${place[*]}")

# components: Open MPI's own directory and loom's
if [ -z "${OMPI_MCA_mca_base_component_path:-}" ]; then
    ompidir=${OMPI_COMPONENT_DIR:-$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/^ *Pkglibdir: *//p')}
    if [ -z "$loomdir" ] && [ -f "$here/../../.libs/mca_coll_loom.so" ]; then
        loomdir=$(cd "$here/../../.libs" && pwd)
    fi
    [ -n "$loomdir" ] && [ -f "$loomdir/mca_coll_loom.so" ] || die "mca_coll_loom.so not found (build it, or --loom-dir)"
    export OMPI_MCA_mca_base_component_path="$ompidir:$loomdir"
fi
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export LOOM_CLUSTER_NODES=$nodes LOOM_CLUSTER_PLACEMENT=$placement

hostfile=$(mktemp "${TMPDIR:-/tmp}/loom-cluster-hosts.XXXXXX")
trap 'rm -f "$hostfile"' EXIT
printf '%s\n' "${place[@]}" >"$hostfile"

cmd=(mpirun -np "$np" --hostfile "$hostfile" --mca rmaps seq
    --mca plm_rsh_agent "$here/agent.sh" --mca plm_rsh_no_tree_spawn 1
    --mca oob_tcp_if_include "$subnet.0/24" --bind-to none
    -x OMPI_MCA_mca_base_component_path -x LOOM_CLUSTER_NODES -x LOOM_CLUSTER_PLACEMENT)
# mca NAME VALUE: add --mca NAME VALUE unless the caller passed NAME already (Open
# MPI refuses a parameter given twice), so e.g. --mca btl self,tcp overrides ours
mca() {
    local i
    for ((i = 0; i + 1 < ${#extra[@]}; i++)); do
        case "${extra[i]}" in
        --mca | -mca | --gmca | -gmca) [ "${extra[i + 1]}" = "$1" ] && return ;;
        esac
    done
    cmd+=(--mca "$1" "$2")
}
mca mpi_yield_when_idle 1
if [ $pml = ob1 ]; then
    mca pml ob1
    mca btl self,vader,tcp
    # an emulated torus (cluster.sh up N --torus DIMS): MPI traffic over its links
    if [ -s "$STATE/torus" ]; then
        mca btl_tcp_if_include tor0
    else
        mca btl_tcp_if_include "$subnet.0/24"
    fi
else
    mca pml ucx
    mca pml_ucx_tls any
    mca pml_ucx_devices any
    cmd+=(-x "UCX_TLS=${UCX_TLS:-self,sm,tcp}" -x "UCX_NET_DEVICES=${UCX_NET_DEVICES:-cl0}")
fi
cmd+=("${extra[@]}" "$@")

if [ $dry = 1 ]; then
    echo "# hostfile ($np ranks on $nodes nodes): ${place[*]}"
    echo "OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path timeout -k 10 $tmo ${cmd[*]}"
    exit 0
fi

# on timeout: where each rank is stuck, then the job is stopped (exit status 124)
. "$here/../deadline.sh"
deadline_run "$tmo" "$prog" -- "${cmd[@]}"
rc=$?
if [ $rc = 124 ]; then
    echo "mpirun.sh: TIMEOUT after ${tmo}s" >&2
fi
if [ $rc != 0 ]; then
    # a rank that crashed or hung can outlive mpirun: kill what is left in our nodes
    sleep 0.5
    for h in $(printf '%s\n' "${place[@]}" | sort -u); do
        pids=$(ip netns pids "$h" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
fi
exit $rc
