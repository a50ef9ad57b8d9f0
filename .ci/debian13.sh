#!/usr/bin/env bash
# loom on its second Open MPI series: Open MPI 5.0 in a Debian 13 tree.
#
#   .ci/debian13.sh prepare          the tree, its packages, and the README's quickstart
#                                    (build, install, ompi_info check) on a copy of this
#                                    source, then the test programs: .ci/run starts it beside
#                                    the Debian 12 unit tests, which keep one core busy
#   .ci/debian13.sh test [SECONDS]   the MPI tests inside (default 900 s)
# (root; both steps by default)
#
# 1. The tree: $LOOM_DEBIAN13_DIR (default /var/cache/loom/debian13), made with
#    `debootstrap --variant=minbase trixie` when absent and kept for the next run.
# 2. /proc, /sys, /dev and /dev/shm bind-mounted into it (MPI needs them), unmounted
#    at exit.
# 3. A copy of this source tree (its git files, as a clean clone has them) in
#    /root/loom inside, where the README's quickstart installs the packages, builds,
#    installs and checks that Open MPI sees loom, and then the MPI tests run with
#    LOOM_TEST_SCOPE=core (every collective, algorithm and form at fewer process
#    counts, the default selection, the node segment, a fault test, the negative
#    controls; the Debian 12 run has the full matrix and the emulated cluster).
set -euo pipefail

src=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
root=${LOOM_DEBIAN13_DIR:-/var/cache/loom/debian13}
what=${1:-all}
limit=${2:-900}
case "$what" in prepare|test|all) ;; *) echo "usage: $0 [prepare|test|all] [SECONDS]" >&2; exit 2 ;; esac
mirror=${LOOM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

[ "$(id -u)" -eq 0 ] || { echo "debian13: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }

if [ ! -f "$root/.loom-tree" ]; then
    if ! command -v debootstrap >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap
    fi
    echo "==> [debian13] debootstrap trixie into $root"
    rm -rf "$root.new"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase trixie "$root.new" "$mirror" >"$root.log" 2>&1 ||
        { tail -n 20 "$root.log" >&2; echo "debian13: debootstrap failed (log: $root.log)" >&2; exit 1; }
    rm -rf "$root"
    mv "$root.new" "$root"
    touch "$root/.loom-tree"
fi

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
    done
}
trap cleanup EXIT
for d in proc sys dev dev/shm; do
    mkdir -p "$root/$d"
    if ! mountpoint -q "$root/$d"; then
        mount --bind "/$d" "$root/$d"
        mounted+=("$root/$d")
    fi
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
copy_source() { # copy_source DIR (under the tree's /root)
    rm -rf "$root/root/$1"
    mkdir -p "$root/root/$1"
    (cd "$src" && git ls-files -z | tar --null -cf - -T -) | tar -xf - -C "$root/root/$1"
}
in_tree() {
    chroot "$root" /usr/bin/env -i \
        HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        LOOM_TEST_SCOPE=core /bin/bash -c "$1"
}

if [ "$what" != test ]; then
    echo "==> [debian13] quickstart --no-demo and the test programs, on a copy of the source"
    copy_source loom
    in_tree 'cd /root/loom && ./quickstart.sh --no-demo && make -j"$(nproc)" mpi-test-programs'
    # a second build of the component without UCX (configure --without-ucx): it must
    # build, link no UCX library, and run (step "test" below)
    echo "==> [debian13] the component configured --without-ucx"
    copy_source loom-noucx
    in_tree 'cd /root/loom-noucx && ./autogen.sh >/dev/null 2>&1 &&
             ./configure --without-ucx --with-component-dir=/root/loom-noucx/inst >configure.log 2>&1 &&
             nice -n 10 make -j"$(nproc)" mca_coll_loom.la .libs/help-coll-loom.txt >make.log 2>&1' ||
        { echo "debian13: the build without UCX failed (/root/loom-noucx in the tree)" >&2; exit 1; }
fi
[ "$what" = prepare ] && exit 0

echo "==> [debian13] the component built without UCX: no UCX library, and it runs"
in_tree 'cd /root/loom-noucx && so=.libs/mca_coll_loom.so &&
         if readelf -d "$so" | grep NEEDED | grep -q "libuc[pst]" || nm -D --undefined-only "$so" | grep -q " ucp_"; then
             echo "FAIL: $so links UCX"; exit 1; fi &&
         export OMPI_MCA_mca_base_component_path="$(ompi_info --path pkglibdir | sed -n "s/^ *Pkglibdir: *//p"):$PWD/.libs" &&
         out=$(timeout 120 mpirun --oversubscribe --bind-to none -np 4 --mca coll_loom_transport ucx \
               --mca coll_loom_verbose 1 /root/loom/test/mpi/test_allreduce 2>&1 | tr -d "\\000") &&
         echo "$out" | grep -q "loom was built without UCX" && echo "$out" | grep -q " 0 failures" &&
         echo "PASS: configure --without-ucx: no UCX library linked; test_allreduce np=4 exact, coll_loom_transport ucx stays on the PML" ||
         { echo "$out" | tail -n 20; echo "FAIL: the component built without UCX"; exit 1; }'
echo "==> [debian13] the MPI tests (scope core), at most ${limit}s"
export -f in_tree
export root
timeout --kill-after=30 "$limit" bash -c 'in_tree "cd /root/loom && make check-mpi"'
