#!/bin/bash
# loom: tests on the emulated multi-node cluster (one network namespace per node).
#
#   run-cluster-tests.sh [DIR]
#
# DIR holds test_allreduce, test_colls, test_barrier, test_lifecycle, test_rules, test_pipeline,
# test_faults, test_nonblocking, test_alltoall
# (default $LOOM_MPI_TEST_DIR, else ../mpi beside this script); a missing one, and
# smoke, are compiled with mpicc into the log directory.  Needs root, iproute2 (ip,
# tc) and util-linux (unshare); without root, or with LOOM_CLUSTER_TESTS=no, it prints
# SKIP and exits 77.
#
# Environment: LOOM_COMPONENT_DIR (mca_coll_loom.so; default the build tree's .libs),
# LOOM_CLUSTER_LOGDIR (default $LOOM_TEST_LOGDIR/cluster, else a new /tmp dir),
# LOOM_CLUSTER_TIMEOUT (seconds per mpirun, default 120), LOOM_CLUSTER_SUBNET (see
# cluster.sh).  Brings the cluster down first: do not run it while other jobs use
# the emulated cluster.
#
# Runs, each printed as one PASS/FAIL line:
#   1. cluster.sh: up, up again (idempotent), status;
#   2. 4 nodes x 2: smoke (distinct nodes, one shared-memory communicator per node,
#      loom loaded and serving on every rank), test_allreduce, test_colls, test_barrier,
#      test_alltoall (also round-robin, 3 x 3 and on uneven nodes: hierarchical's alltoall);
#      a rules file one node cannot read (every call to the previous component, reported);
#      a rules file that gives hierarchical's bcast and reduce circulant and
#      halving_doubling among the nodes (test_colls, the explain lines show them);
#      torus maps of the nodes: the diagonal of a 4 x 4 torus for test_colls (bcast and
#      reduce then run on two trees), a 2 x 2 torus below for test_allreduce and
#      test_nonblocking round-robin and one rank per node (swing's torus form), test_colls on
#      uneven nodes: torus forced among the others;
#      a negative control (--mca coll ^loom: smoke must FAIL); smoke over UCX;
#      coll_loom_transport ucx (test_allreduce and test_alltoall, with direct writes, under
#      pml ob1, test_allreduce and test_nonblocking under pml ucx), and with UCX made to fail;
#      auto: not set up under pml ucx, small allreduces over it under pml ob1;
#   3. 4 x 2 with round-robin placement (rank i on node i mod 4), with failures injected
#      inside each node segment's protocol (test_faults, also on the uneven nodes), and
#      one node's failure on WORLD (test_faults --several-nodes);
#   4. 3 nodes x 3 (the cluster rebuilt at another size);
#   5. uneven nodes: --map 1,3,2 round-robin (also with other algorithms among the nodes
#      for hierarchical's bcast and reduce), and --map 3,1,2 consecutive;
#   6. 1 Gbit/s tbf shaping on the links: smoke;
#   7. cluster.sh down leaves nothing behind, and down again succeeds.
# The cluster is torn down at the end, also on failure or interruption.
# Ends with "N passed, M failed" and the total time; exits non-zero on any failure.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bindir=${1:-${LOOM_MPI_TEST_DIR:-$here/../mpi}}
if [ -n "${LOOM_CLUSTER_LOGDIR:-}" ]; then
    logdir=$LOOM_CLUSTER_LOGDIR
elif [ -n "${LOOM_TEST_LOGDIR:-}" ]; then
    logdir=$LOOM_TEST_LOGDIR/cluster # make check's log directory: a subdirectory of our own
else
    logdir=$(mktemp -d "${TMPDIR:-/tmp}/loom-cluster-tests.XXXXXX")
fi
mkdir -p "$logdir"
export LOOM_CLUSTER_TIMEOUT=${LOOM_CLUSTER_TIMEOUT:-120}
CL=$here/cluster.sh
MR=$here/mpirun.sh
t_start=$SECONDS

if [ "${LOOM_CLUSTER_TESTS:-yes}" = no ]; then
    echo "SKIP: LOOM_CLUSTER_TESTS=no"
    exit 77
fi
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the emulated cluster needs root (network namespaces)"
    exit 77
fi
for c in ip tc unshare mpirun mpicc; do
    if ! command -v "$c" >/dev/null; then
        echo "FAIL: $c not found (apt-get install iproute2 util-linux openmpi-bin libopenmpi-dev)"
        exit 1
    fi
done
# No loom parameter may leak in from the caller's environment
for v in $(env | sed -n 's/^\(OMPI_MCA_coll_loom_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

cleanup() { "$CL" down >>"$logdir/cluster.log" 2>&1; }
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

echo "loom cluster tests"
echo "  binaries .... $bindir"
echo "  logs ........ $logdir"

pass=0
fail=0
failed_runs=()
result() { # result PASS|FAIL name seconds [log]
    printf '%s: %-58s (%ss)\n' "$1" "$2" "$3"
    if [ "$1" = PASS ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed_runs+=("$2")
        if [ -n "${4:-}" ] && [ -f "$4" ]; then
            echo "---- last lines of $4 ----"
            grep -v '^ *$' "$4" | tail -n 40 | sed 's/^/    /'
            echo "----"
        fi
    fi
}
log_of() { echo "$logdir/$(echo "$1" | tr -c 'A-Za-z0-9_.=-' '_').log"; }

# ---- binaries ---------------------------------------------------------------------------
build() { # build NAME SOURCE: echo the binary's path, or nothing
    # -I: loom_test_util.h takes the list of collectives from loom_registry.h
    if mpicc -std=gnu11 -O2 -Wall -Wextra -I"$here/../.." -o "$logdir/$1" "$2" -lm >"$logdir/$1.build.log" 2>&1; then
        echo "$logdir/$1"
    fi
}
SMOKE=$(build smoke "$here/smoke.c")
[ -n "$SMOKE" ] || result FAIL "build smoke" 0 "$logdir/smoke.build.log"
test_allreduce="" test_colls="" test_barrier="" test_lifecycle="" test_rules="" test_pipeline="" test_faults=""
test_nonblocking="" test_alltoall=""
for p in test_allreduce test_colls test_barrier test_lifecycle test_rules test_pipeline test_faults test_nonblocking \
    test_alltoall; do
    if [ -x "$bindir/$p" ]; then
        eval "$p=\$bindir/\$p"
    else
        b=$(build "$p" "$here/../mpi/$p.c")
        [ -n "$b" ] || result FAIL "build $p" 0 "$logdir/$p.build.log"
        eval "$p=\$b"
    fi
done

# ---- helpers ------------------------------------------------------------------------------
# cl NAME ARGS...: a cluster.sh command as one PASS/FAIL line
cl() {
    local name=$1 t0=$SECONDS log
    shift
    log=$(log_of "$name")
    if "$CL" "$@" >"$log" 2>&1; then
        result PASS "$name" $((SECONDS - t0))
    else
        result FAIL "$name" $((SECONDS - t0)) "$log"
    fi
}

# run NAME EXPECT(0|nonzero) [mpirun.sh options] -- PROGRAM [ARGS]
run() {
    local name=$1 expect=$2 t0=$SECONDS log rc
    shift 2
    log=$(log_of "$name")
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    if [ -z "${1:-}" ]; then
        result FAIL "$name (program not built)" 0
        return
    fi
    "$MR" "${opts[@]}" -- "$@" >"$log" 2>&1 </dev/null
    rc=$?
    if { [ "$expect" = 0 ] && [ $rc = 0 ]; } ||
        { [ "$expect" != 0 ] && [ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ]; }; then
        result PASS "$name" $((SECONDS - t0))
    else
        echo "exit status $rc (expected $expect)" >>"$log"
        result FAIL "$name" $((SECONDS - t0)) "$log"
    fi
}

# check NAME COMMAND...: a shell check as one PASS/FAIL line
check() {
    local name=$1 log
    shift
    log=$(log_of "$name")
    if "$@" >"$log" 2>&1; then result PASS "$name" 0; else result FAIL "$name" 0 "$log"; fi
}
n_ns() { ip netns list | awk '{print $1}' | grep -cE '^loomnode[0-9]+$'; }
n_hosts() { grep -c '# loom-cluster' /etc/hosts; }
is_4_nodes() { "$CL" status && [ "$(n_ns)" = 4 ] && [ "$(n_hosts)" = 4 ]; }
nothing_left() {
    "$CL" status
    [ "$(n_ns)" = 0 ] && [ "$(n_hosts)" = 0 ] && ! ip link show loombr0 2>/dev/null &&
        [ -z "$(ip -o link show | grep -E ': loomv[0-9]+')" ]
}
shaped() { for i in 0 1 2; do tc -n loomnode$i qdisc show dev cl0 | grep -q 'tbf.*rate 1Gbit' || return 1; done; }

# ---- 1. the cluster itself ----------------------------------------------------------------------
cl "cluster.sh down (clean start)" down
cl "cluster.sh up 4" up 4
cl "cluster.sh up 4 again (idempotent)" up 4
check "4 namespaces, 4 /etc/hosts lines, status ok" is_4_nodes

# ---- 2. 4 nodes x 2 ranks, consecutive ------------------------------------------------------
# A 2 x 2 torus map over the four nodes (coll_loom_torus_file), given to some of the runs
# below: every communicator of theirs then has a map, so a forced `torus` must serve every
# commutative bcast, reduce and allreduce, exactly, on any placement.
torus_map=$logdir/torus-2x2.map
printf '# the emulated nodes on a 2 x 2 torus\ndims 2 2\nloomnode0 0 0\nloomnode1 0 1\nloomnode2 1 1\nloomnode3 1 0\n' \
    >"$torus_map"
# The four nodes on the diagonal of a 4 x 4 torus: a second tree fits beside the first for a
# bcast or reduce over all four (test_torus), so torus runs them on two trees.
torus_diag=$logdir/torus-4x4-diagonal.map
printf '# the emulated nodes on the diagonal of a 4 x 4 torus\ndims 4 4\nloomnode0 0 0\nloomnode1 1 1\nloomnode2 2 2\nloomnode3 3 3\n' \
    >"$torus_diag"
run "smoke 4x2" 0 --ppn 2 -- "$SMOKE"
run "test_allreduce 4x2" 0 --ppn 2 -- "$test_allreduce"
name="test_colls 4x2 (on the diagonal torus map: torus forced among the others)"
run "$name" 0 --ppn 2 --mca coll_loom_torus_file "$torus_diag" --mca coll_loom_verbose 10 -- "$test_colls"
check "the torus map of the four nodes shows at verbose 10" \
    grep -qF "torus 4x4 route xy, box [0..3]x[0..3], 4 of 16 nodes present (coll_loom_torus_file)" "$(log_of "$name")"
run "test_barrier 4x2" 0 --ppn 2 -- "$test_barrier"
run "test_nonblocking 4x2 (non-blocking and persistent forms, hierarchical point to point)" 0 --ppn 2 \
    -- "$test_nonblocking" --sections matrix,auto,outstanding,persistent,startall,errors,crossed,segment
run "test_alltoall 4x2 (every form and algorithm)" 0 --ppn 2 -- "$test_alltoall"
# hierarchical's node phases through each node's shared segment (the default up to
# coll_loom_shm_slot_size): 1000 communicators, no segment file left, no mapping kept
run "test_lifecycle 4x2, 1000 cycles, shared-memory node phases, nothing left" 0 --ppn 2 \
    --mca coll_loom_shm_setup_call 1 -- "$test_lifecycle" 1000 --shm --reuse
run "test_colls 4x2, coll_loom_shm 0 (point-to-point node phases: bcast, reduce)" 0 --ppn 2 \
    --mca coll_loom_shm 0 -- "$test_colls" --coll bcast,reduce
# hierarchical's phase among the nodes follows the rules for one rank per node on as many
# nodes (built in: from 17 nodes, not the chain); a rules file brings it to these 4
net_rules=$logdir/rules-net-4.txt
printf 'bcast nodes=4 rpn=1 -> circulant\nreduce nodes=4 rpn=1 op=commutative -> halving_doubling\n' >"$net_rules"
name="test_colls 4x2, bcast and reduce with circulant and halving_doubling among the nodes"
run "$name" 0 --ppn 2 --mca coll_loom_rules_file "$net_rules" --mca coll_loom_verbose 20 \
    -- "$test_colls" --coll bcast,reduce
check "hierarchical ran circulant (bcast) and halving_doubling (reduce) among the nodes" bash -c \
    "grep -qE 'bcast cid [0-9]+ rank [0-9]+: .*nodes=4 rpn=2 .*-> hierarchical .* net=circulant' '$(log_of "$name")' &&
     grep -qE 'reduce cid [0-9]+ rank [0-9]+: .*nodes=4 rpn=2 .*-> hierarchical .* net=halving_doubling' '$(log_of "$name")'"
name="test_allreduce 4x2, segment cannot be created"
run "$name" 0 --ppn 2 --mca coll_loom_shm_dir /nonexistent-loom-dir --mca coll_loom_verbose 1 \
    -- "$test_allreduce"
# each node's leader, which creates the segment, reports it (4.1: every process prints
# its own help messages)
check "segment failure reported on every node" bash -c \
    "[ \$(grep -c 'coll/loom cannot use a shared-memory segment' '$(log_of "$name")') -ge 4 ]"
# up to 256 B a bcast over several nodes keeps hierarchical's point-to-point node phases
# (no S in the call flags); smoke's bcast is 256 B
name="smoke 4x2, verbose 20: its 256 B bcast runs hierarchical point to point"
run "$name" 0 --ppn 2 --mca coll_loom_verbose 20 -- "$SMOKE"
check "every rank's 256 B bcast: hierarchical, not through the segment" bash -c \
    "[ \$(grep -cE 'bcast cid [0-9]+ rank [0-9]: bytes=256 P=8 nodes=4 rpn=2 call=[A-Z-]{4}- -> hierarchical' \
    '$(log_of "$name")') -eq 8 ]"
# from 257 B through the segment (S), once it is set up (the 8th call that could use it)
name="test_rules 4x2, verbose 20: 300 B bcasts run hierarchical through the segment"
run "$name" 0 --ppn 2 --mca coll_loom_verbose 20 -- "$test_rules" --bcast --warmup=7 hierarchical 300
check "every rank's last 4 bcasts of 300 B: hierarchical through the segment" bash -c \
    "[ \$(grep -cE 'bcast cid [0-9]+ rank [0-9]: bytes=300 P=8 nodes=4 rpn=2 call=[A-Z-]{4}S -> hierarchical' \
    '$(log_of "$name")') -ge 32 ]"
# small calls through the segments that run ahead of each other (bcast roots, reduce
# contributors), on several nodes
run "test_pipeline 4x2, 1500 calls per communicator" 0 --ppn 2 --mca coll_loom_shm_setup_call 1 \
    -- "$test_pipeline" 1500
# a rules file one node cannot read: that node reports it at MPI_Init and keeps the built-in
# rules, so its ranks would decide differently; the first call finds the difference and
# every call goes to the previous component, exact and without a hang, and the node's
# lowest rank says so without any verbosity
rules=$logdir/rules-4x2.txt
echo "allreduce -> bruck bruck_ports=3" >"$rules"
name="rules file unreadable on loomnode2: every call to previous 4x2"
run "$name" 0 --ppn 2 -- bash -c \
    'f=$1; shift; [ "$(hostname)" = loomnode2 ] && f=$f.missing; OMPI_MCA_coll_loom_rules_file=$f exec "$@"' \
    rules "$rules" "$test_rules" previous 4
log=$(log_of "$name")
check "the unreadable file and the differing node are reported" bash -c \
    "grep -qF 'File:   $rules.missing' '$log' && grep -qF 'do not all use the same loom settings' '$log' &&
     grep -qF 'Rank 4 on loomnode2: fingerprint' '$log'"
# Open MPI 5.0 turns han on (priority 35) for communicators over several nodes, so there
# the component below loom, which serves every call loom leaves, is han.  The same here
# with han's priority raised: every allreduce goes to the previous component by the rules
# file, must be exact, and han must be what was selected below loom.
rules_prev=$logdir/rules-previous.txt
echo "allreduce -> previous" >"$rules_prev"
name="han below loom: rules send every allreduce to the previous component 4x2"
run "$name" 0 --ppn 2 --mca coll_han_priority 35 --mca coll_base_verbose 10 \
    --mca coll_loom_rules_file "$rules_prev" -- "$test_rules" previous 4096
check "han was selected below loom on every node" bash -c \
    "[ \$(grep -cE 'selecting +han, priority +35, Enabled' '$(log_of "$name")') -ge 8 ]"
run "negative control: smoke 4x2 --mca coll ^loom must FAIL" nonzero --ppn 2 --mca coll '^loom' -- "$SMOKE"
# coll_loom_transport auto: under pml ucx loom's worker is not set up; under pml ob1 the
# built-in transport rules send small allreduces between nodes over it
run "smoke 4x2 over UCX (transport auto: loom's worker not set up)" 0 --ucx --ppn 2 \
    -x LOOM_TEST_EXPECT_UCX=0 -- "$SMOKE"
name="transport auto under pml ob1: small allreduces over loom's worker (smoke 4x2)"
run "$name" 0 --ob1 --ppn 2 --mca coll_loom_verbose 20 -x LOOM_TEST_EXPECT_UCX=1 -x LOOM_UCX_NET_DEVICES=cl0 \
    -- "$SMOKE"
check "transport auto: the 8-byte allreduce on 4 nodes says 'over ucx'" \
    grep -qE "allreduce cid [^ ]+ rank 0: bytes=8 P=8 nodes=4 .* over ucx \(rule" "$(log_of "$name")"
# loom's own UCX worker carries the collectives' messages, under either PML (every process
# proves it posted there); a UCX that cannot start leaves them to the PML, with the reason
lucx=(--mca coll_loom_transport ucx -x LOOM_TEST_EXPECT_UCX=1 -x LOOM_UCX_NET_DEVICES=cl0)
# (each program under one of the PMLs: CI's time budget; every one passed under both)
run "transport ucx under pml ob1: test_allreduce 4x2 round-robin" 0 --ob1 --ppn 2 --rr "${lucx[@]}" \
    -- "$test_allreduce"
run "transport ucx under pml ob1, direct writes: test_alltoall 4x2" 0 --ob1 --ppn 2 "${lucx[@]}" \
    --mca coll_loom_ucx_put_max 65536 -x LOOM_TEST_EXPECT_PUTS=1 -- "$test_alltoall"
run "transport ucx under pml ucx: test_allreduce 4x2" 0 --ucx --ppn 2 "${lucx[@]}" -- "$test_allreduce"
run "transport ucx under pml ucx: test_nonblocking 4x2 round-robin" 0 --ucx --ppn 2 --rr "${lucx[@]}" \
    -- "$test_nonblocking" --sections matrix,outstanding,persistent
name="transport ucx with UCX made to fail (LOOM_UCX_TLS=none) under pml ucx 4x2"
run "$name" 0 --ucx --ppn 2 --mca coll_loom_transport ucx --mca coll_loom_verbose 1 -x LOOM_UCX_TLS=none \
    -x LOOM_TEST_EXPECT_UCX=0 -- "$test_allreduce"
check "a UCX that cannot start: the PML, and the reason" \
    grep -qF "the UCX transport is not available here (ucp_init" "$(log_of "$name")"

# ---- 3. 4 x 2, round-robin: rank i on node i mod 4 --------------------------------------------
run "smoke 4x2 round-robin" 0 --ppn 2 --rr -- "$SMOKE"
run "test_allreduce 4x2 round-robin (on the torus map)" 0 --ppn 2 --rr --mca coll_loom_torus_file "$torus_map" \
    -- "$test_allreduce"
run "test_colls 4x2 round-robin" 0 --ppn 2 --rr -- "$test_colls"
# one rank per node on the 2 x 2 map: swing (forced among the others) runs its torus form,
# four parts at once over the nodes' links, blocking and non-blocking, allreduce and allgather
run "test_allreduce 4x1 (on the torus map: swing over its links)" 0 --ppn 1 --mca coll_loom_torus_file "$torus_map" \
    -- "$test_allreduce"
run "test_nonblocking 4x1 (on the torus map)" 0 --ppn 1 --mca coll_loom_torus_file "$torus_map" \
    -- "$test_nonblocking" --sections matrix,persistent
run "test_colls allgather 4x1 (on the torus map: swing over its links)" 0 --ppn 1 \
    --mca coll_loom_torus_file "$torus_map" -- "$test_colls" --coll allgather
run "test_nonblocking 4x2 round-robin (on the torus map)" 0 --ppn 2 --rr --mca coll_loom_torus_file "$torus_map" \
    -- "$test_nonblocking" \
    --sections matrix,outstanding,persistent
run "test_alltoall 4x2 round-robin" 0 --ppn 2 --rr -- "$test_alltoall"
run "test_pipeline 4x2 round-robin" 0 --ppn 2 --rr --mca coll_loom_shm_setup_call 1 -- "$test_pipeline" 1500
run "test_faults 4x2 round-robin (every node's communicator)" 0 --ppn 2 --rr \
    --mca coll_loom_shm_setup_call 1 -- "$test_faults"
# a failure on one node of WORLD: that node's ranks get errors, now and at every later
# call; the other nodes wait (no wrong data as a success) until node A aborts the job
name="test_faults --several-nodes 4x2: a node's failure, then node A aborts the job"
run "$name" nonzero --ppn 2 --mca coll_loom_shm_setup_call 1 -- "$test_faults" --several-nodes
check "node A's two ranks saw errors, now and later; no rank returned wrong data" bash -c \
    "[ \$(grep -c 'on node A: PASS' '$(log_of "$name")') -eq 2 ] && ! grep -q '^FAIL' '$(log_of "$name")'"

# ---- 4. 3 nodes x 3 ranks -----------------------------------------------------------------------
cl "cluster.sh up 3 (rebuilt at another size)" up 3
run "smoke 3x3" 0 --ppn 3 -- "$SMOKE"
run "test_allreduce 3x3" 0 --ppn 3 -- "$test_allreduce"
run "test_alltoall 3x3" 0 --ppn 3 -- "$test_alltoall"
run "test_pipeline 3x3" 0 --ppn 3 --mca coll_loom_shm_setup_call 1 -- "$test_pipeline" 1500

# ---- 5. uneven nodes -------------------------------------------------------------------------------
run "smoke map 1,3,2 round-robin" 0 --map 1,3,2 --rr -- "$SMOKE"
run "test_allreduce map 1,3,2 round-robin" 0 --map 1,3,2 --rr -- "$test_allreduce"
run "test_colls map 1,3,2 round-robin (on the torus map)" 0 --map 1,3,2 --rr \
    --mca coll_loom_torus_file "$torus_map" -- "$test_colls"
run "test_pipeline map 1,3,2 round-robin" 0 --map 1,3,2 --rr --mca coll_loom_shm_setup_call 1 \
    -- "$test_pipeline" 1500
run "test_faults map 1,3,2 round-robin (every node's communicator)" 0 --map 1,3,2 --rr \
    --mca coll_loom_shm_setup_call 1 -- "$test_faults"
# hierarchical with scatter + allgather (bcast) and circulant (reduce) among 3 uneven nodes
net3_rules=$logdir/rules-net-3.txt
printf 'bcast nodes=3 rpn=1 -> halving_doubling\nreduce nodes=3 rpn=1 op=commutative -> circulant\n' >"$net3_rules"
name="test_colls map 1,3,2 round-robin, halving_doubling and circulant among the nodes"
run "$name" 0 --map 1,3,2 --rr --mca coll_loom_rules_file "$net3_rules" --mca coll_loom_verbose 20 \
    -- "$test_colls" --coll bcast,reduce
check "hierarchical ran halving_doubling (bcast) and circulant (reduce) among the 3 nodes" bash -c \
    "grep -qE 'bcast cid [0-9]+ rank [0-9]+: .*nodes=3 rpn=3 .*-> hierarchical .* net=halving_doubling' '$(log_of "$name")' &&
     grep -qE 'reduce cid [0-9]+ rank [0-9]+: .*nodes=3 rpn=3 .*-> hierarchical .* net=circulant' '$(log_of "$name")'"
run "smoke map 3,1,2 consecutive" 0 --map 3,1,2 -- "$SMOKE"
run "test_alltoall map 3,1,2 consecutive" 0 --map 3,1,2 -- "$test_alltoall"
# a node of one rank has no segment; the others do
run "test_lifecycle map 1,3,2 round-robin, 200 cycles, shared memory" 0 --map 1,3,2 --rr \
    --mca coll_loom_shm_setup_call 1 -- "$test_lifecycle" 200 --shm --reuse

# ---- 6. shaped links ----------------------------------------------------------------------------------
cl "cluster.sh up 3 --shape 1gbit" up 3 --shape 1gbit
check "tbf 1gbit on every node's link" shaped
run "smoke 3x2 on 1 Gbit/s links" 0 --ppn 2 -- "$SMOKE"

# ---- 7. teardown -------------------------------------------------------------------------------------------
cl "cluster.sh down" down
check "nothing left (namespaces, links, /etc/hosts)" nothing_left
cl "cluster.sh down again (nothing there)" down

echo
if [ $fail -gt 0 ]; then
    echo "failed runs:"
    for f in "${failed_runs[@]}"; do echo "  $f"; done
    echo "logs: $logdir"
fi
echo "$pass passed, $fail failed (total $((SECONDS - t_start)) s)"
[ $fail = 0 ]
