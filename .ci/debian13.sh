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
copy_source() {
    rm -rf "$root/root/loom"
    mkdir -p "$root/root/loom"
    (cd "$src" && git ls-files -z | tar --null -cf - -T -) | tar -xf - -C "$root/root/loom"
}
in_tree() {
    chroot "$root" /usr/bin/env -i \
        HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        LOOM_TEST_SCOPE=core /bin/bash -c "$1"
}

if [ "$what" != test ]; then
    echo "==> [debian13] quickstart --no-demo and the test programs, on a copy of the source"
    copy_source
    in_tree 'cd /root/loom && ./quickstart.sh --no-demo && make -j"$(nproc)" mpi-test-programs'
fi
[ "$what" = prepare ] && exit 0

echo "==> [debian13] the MPI tests (scope core), at most ${limit}s"
export -f in_tree
export root
timeout --kill-after=30 "$limit" bash -c 'in_tree "cd /root/loom && make check-mpi"'
