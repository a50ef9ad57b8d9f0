#!/usr/bin/env bash
# loom under valgrind: communicator create/free cycles with loom's allreduce, barrier,
# bcast, reduce, allgather, reduce_scatter_block, scan and exscan on each communicator
# (test_lifecycle, with the pool of freed segments), and small calls through the node
# segment that run ahead of each other (test_pipeline), and failures injected inside
# the node segment's protocol (test_faults), and non-blocking and persistent requests
# (test_nonblocking: many outstanding, Startall, cancel and free errors, small allreduces
# through the node segment), and alltoall(v)
# in every form with every algorithm (test_alltoall, over loom's UCX transport with
# direct writes), and the info-key thresholds
# (test_threshold), and the stale-synchronous allreduce with contributions in flight at
# communicator free (test_ssp), and calls without data, persistent start orders and
# failing local steps that poison a schedule (test_zeros), at np 3.  Fails when any
# memcheck error or definite/indirect leak has a loom frame in its stack.  Open
# MPI's own noise (PMIx, hwloc, ORTE) is not loom's to fix and is ignored.
# Open MPI unloads components at MPI_Finalize; --keep-debuginfo lets valgrind
# still name loom's frames in the leak report.
# Environment as for run-mpi-tests.sh: LOOM_MPI_TEST_DIR, MPIRUN,
# OMPI_MCA_mca_base_component_path (set by make check).
set -u
bindir=${LOOM_MPI_TEST_DIR:-$(dirname "$(readlink -f "$0")")}
mpirun=${MPIRUN:-mpirun}
if ! command -v valgrind >/dev/null 2>&1; then
    echo "run-valgrind: FAIL: valgrind is not installed" >&2
    exit 1
fi
logdir=$(mktemp -d /tmp/loom-valgrind.XXXXXX)
trap 'rm -rf "$logdir"' EXIT
rc=0
for prog in "test_lifecycle 30 --reuse" "test_pipeline 300" "test_faults" \
    "test_nonblocking --sections outstanding,startall,errors,crossed,segment" "test_alltoall" "test_threshold" "test_ssp" "test_zeros"; do
    set -- $prog
    extra=()
    if [ "$1" = test_alltoall ]; then
        # over loom's own UCX worker, with direct writes into the peers' windows
        extra=(--mca coll_loom_transport ucx --mca coll_loom_ucx_put_max 4096 -x LOOM_TEST_EXPECT_PUTS=1)
    fi
    # the segment at each communicator's first call, as its calls are few
    if ! timeout -k 10 300 "$mpirun" -np 3 --oversubscribe --bind-to none \
            --mca coll_loom_shm_setup_call 1 "${extra[@]}" \
            valgrind -q --keep-debuginfo=yes --leak-check=full --show-leak-kinds=definite,indirect \
            --log-file="$logdir/$1.%p" "$bindir/$1" "${@:2}" >"$logdir/$1.out" 2>&1; then
        echo "run-valgrind: FAIL: $prog under valgrind"; cat "$logdir/$1.out"; rc=1
    fi
done
# valgrind separates its reports by "==PID== " lines; keep reports naming a loom frame
bad=$(awk '
    function flush() { if (rec ~ /mca_coll_loom|coll_loom_|loom_sched|loom_alg_|loom_topo|loom_decide|loom_registry/) print rec; rec = "" }
    /^==[0-9]+== *$/ { flush(); next }
    { rec = rec $0 "\n" }
    END { flush() }' "$logdir"/test_*.[0-9]* 2>/dev/null)
if [ -n "$bad" ]; then
    echo "run-valgrind: FAIL: memcheck reports with loom frames:"; echo "$bad" | head -60; rc=1
fi
[ $rc -eq 0 ] && echo "run-valgrind: PASS (no memcheck error or leak in loom's code)"
exit $rc
