#!/bin/bash
# loom demo: the same unmodified MPI program, with loom and with stock Open MPI.
#
#   run-demo.sh [DIR] [-- demo arguments]
#
# DIR holds the demo binary (default $LOOM_BENCH_DIR, else this script's directory);
# if it is missing, demo.c beside this script is compiled with mpicc.
#
# 1. `ompi_info | grep loom`: is loom visible to Open MPI at all?
# 2. mpirun -np 4 demo with no --mca flag: loom is picked up from wherever Open MPI
#    finds components (its installed location, e.g. ~/.openmpi/components; or
#    $OMPI_MCA_mca_base_component_path when the caller set it).  This first run
#    also gets -x OMPI_MCA_coll_loom_verbose=10, so loom prints one topology line per
#    communicator it serves: that line is the proof loom was used.
# 3. mpirun -np 4 --mca coll ^loom demo: stock Open MPI (tuned).
# Prints both times and their ratio and checks that the checksums agree (to 1e-9
# relative: the two implementations add floating-point numbers in different orders).
#
# Environment: MPIRUN (default mpirun), LOOM_DEMO_NP (default 4).
# Note: this machine may have fewer cores than ranks: the runs are oversubscribed
# (--oversubscribe), so the times measure a crowded machine.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${LOOM_BENCH_DIR:-$here}
if [ $# -gt 0 ] && [ "$1" != -- ]; then dir=$1; shift; fi
[ "${1:-}" = -- ] && shift
MPIRUN=${MPIRUN:-mpirun}
NP=${LOOM_DEMO_NP:-4}

if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

demo=$dir/demo
if [ ! -x "$demo" ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/loom-demo.XXXXXX")
    echo "demo binary not found in $dir: compiling $here/demo.c with mpicc"
    mpicc -O2 -o "$tmp/demo" "$here/demo.c" -lm || { echo "FAIL: cannot compile the demo"; exit 1; }
    demo=$tmp/demo
fi

echo "== ompi_info | grep loom"
if ! ompi_info 2>/dev/null | grep loom; then
    echo "FAIL: Open MPI does not see the loom component (install it: make install, or set"
    echo "      OMPI_MCA_mca_base_component_path to include the directory of mca_coll_loom.so)"
    exit 1
fi

cores=$(nproc 2>/dev/null || echo '?')
echo
echo "== run 1: loom (no --mca flag; -x OMPI_MCA_coll_loom_verbose=10 to show loom's topology line)"
echo "   $NP ranks on $cores cores: oversubscribed (--oversubscribe --bind-to none)"
out1=$("$MPIRUN" --oversubscribe --bind-to none -np "$NP" -x OMPI_MCA_coll_loom_verbose=10 "$demo" "$@" 2>&1)
rc1=$?
echo "$out1" | grep -v '^ *$' | grep -v 'coll/loom: communicator' | sed 's/^/   /'
topo=$(echo "$out1" | grep 'coll/loom: communicator' | grep -m1 'MPI_COMM_WORLD')
if [ -n "$topo" ]; then
    echo "   loom served MPI_COMM_WORLD: ${topo#*coll/loom: }"
    nlines=$(echo "$out1" | grep -c 'coll/loom: communicator')
    echo "   ($nlines loom topology lines in total)"
else
    echo "   FAIL: loom printed no topology line for MPI_COMM_WORLD: it did not serve the demo"
fi

echo
echo "== run 2: stock Open MPI (--mca coll ^loom)"
out2=$("$MPIRUN" --oversubscribe --bind-to none -np "$NP" --mca coll '^loom' "$demo" "$@" 2>&1)
rc2=$?
echo "$out2" | grep -v '^ *$' | sed 's/^/   /'

t1=$(echo "$out1" | sed -n 's/^time: *\([0-9.eE+-]*\) s.*/\1/p' | head -n1)
t2=$(echo "$out2" | sed -n 's/^time: *\([0-9.eE+-]*\) s.*/\1/p' | head -n1)
c1=$(echo "$out1" | sed -n 's/^checksum: *//p' | head -n1)
c2=$(echo "$out2" | sed -n 's/^checksum: *//p' | head -n1)

echo
status=0
if [ $rc1 != 0 ] || [ $rc2 != 0 ] || [ -z "$t1" ] || [ -z "$t2" ] || [ -z "$c1" ] || [ -z "$c2" ]; then
    echo "FAIL: a run failed (exit status $rc1 / $rc2)"
    exit 1
fi
awk -v t1="$t1" -v t2="$t2" 'BEGIN {
    printf "loom:  %.4f s\nstock: %.4f s\nstock/loom = %.2fx (%s)\n", t1, t2, t2 / t1,
           (t2 > t1 ? "loom faster" : "stock faster") }'
if awk -v a="$c1" -v b="$c2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a);
                                       exit !(d <= 1e-9 * m) }'; then
    echo "checksums match: $c1 (loom) vs $c2 (stock)"
else
    echo "FAIL: checksums differ: $c1 (loom) vs $c2 (stock)"
    status=1
fi
[ -n "$topo" ] || status=1
exit $status
