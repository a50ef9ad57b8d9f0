#!/usr/bin/env bash
# loom quick start, for a fresh Debian 12 (Open MPI 4.1) or Debian 13 (Open MPI
# 5.0) machine (run as root, or as a user with sudo for the package step):
#
#   ./quickstart.sh              install what is missing, build, install, check, demo
#   ./quickstart.sh --no-demo    the same without the demo
#   ./quickstart.sh --packages   only step 1 (what a build and the tests need)
#   ./quickstart.sh -- ARGS...   pass ARGS to ./configure (e.g. --with-component-dir=system)
#
# Steps:
#   1. Debian packages: apt-get update + install, only when something is missing.
#   2. ./autogen.sh && ./configure && make && make install
#      (default: mca_coll_loom.so into $HOME/.openmpi/components, where Open MPI
#      looks without any flag).
#   3. Verify that Open MPI sees the component (ompi_info | grep loom), and that
#      the processes mpirun starts do too (Open MPI 5.0's mpirun may replace the
#      component path: the script then says which line to add to ~/.bashrc).
#   4. The demo, test/bench/run-demo.sh: an unmodified MPI program with loom, then
#      with stock Open MPI (--mca coll ^loom), times and ratio.
# Re-running is safe: every step is repeated and converges to the same state.
# Next step after this script: `make check` (the whole test suite).

set -euo pipefail

# (python3-matplotlib, for the plots in docs/user/performance.md only, is left out: it is a
# large download that neither the build nor the tests need)
PACKAGES=(openmpi-bin iproute2 util-linux libopenmpi-dev libucx-dev libhwloc-dev autoconf automake libtool
          pkg-config make gcc python3 valgrind)

run_demo=1
packages_only=0
configure_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-demo) run_demo=0 ;;
        --packages) packages_only=1 ;;
        -h|--help) sed -n '2,22s/^# \{0,1\}//p' "$0"; exit 0 ;;
        --) shift; configure_args=("$@"); break ;;
        *) echo "quickstart: unknown option '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done

cd "$(dirname "$(readlink -f "$0")")"

step="starting"
say()  { printf '\n==> %s\n' "$*"; }
die()  { printf '\nquickstart: ERROR: %s\n' "$*" >&2; exit 1; }
on_error() {
    local rc=$?
    printf '\nquickstart: FAILED (exit %s) during: %s\n' "$rc" "$step" >&2
    exit "$rc"
}
trap on_error ERR

# ---------------------------------------------------------------------------
step="checking Debian packages"
say "$step"
command -v dpkg-query >/dev/null 2>&1 ||
    die "dpkg-query not found: this script targets Debian 12 and 13.  Elsewhere install Open MPI 4.1 or 5.0 (with devel headers), UCX, hwloc (and PMIx for 5.0), autotools and pkg-config, then run: ./autogen.sh && ./configure && make && make install"
if [ -r /etc/os-release ]; then
    . /etc/os-release
    case "${ID:-}:${VERSION_ID:-}" in
        debian:12) echo "Debian 12: Open MPI 4.1" ;;
        # Open MPI 5.0's internal headers include PMIx's
        debian:13) echo "Debian 13: Open MPI 5.0"; PACKAGES+=(libpmix-dev) ;;
        *) echo "quickstart: warning: made for Debian 12 and 13, this is ${PRETTY_NAME:-unknown}; continuing" ;;
    esac
fi
missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "all present: ${PACKAGES[*]}"
else
    echo "missing: ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        die "packages are missing (${missing[*]}) and installing them needs root: run as root or install sudo"
    fi
    step="apt-get update"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    step="apt-get install ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [ $packages_only -eq 1 ]; then
    say "done: the packages are installed"
    exit 0
fi

# ---------------------------------------------------------------------------
step="./autogen.sh"
say "$step"
./autogen.sh

step="./configure ${configure_args[*]:-}"
say "$step"
./configure "${configure_args[@]}"

step="make"
say "$step"
make -j"$(nproc 2>/dev/null || echo 2)"

step="make install"
say "$step"
make install
componentdir=$(sed -n 's/^componentdir = //p' Makefile)
[ -f "$componentdir/mca_coll_loom.so" ] || die "make install did not produce $componentdir/mca_coll_loom.so"

# ---------------------------------------------------------------------------
# From here on Open MPI must find the component on its own: a component path
# set in the environment would replace the default one.
if [ -n "${OMPI_MCA_mca_base_component_path:-}" ]; then
    echo "quickstart: warning: ignoring OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path" \
         "for the check and the demo (it replaces Open MPI's default component path)"
    unset OMPI_MCA_mca_base_component_path
fi

ompi_component_dir=$(sed -n 's/^OMPI_COMPONENT_DIR = //p' Makefile)
canon() { readlink -f "$1" 2>/dev/null || printf '%s\n' "$1"; }
found_by_default=1
case "$(canon "$componentdir")" in
    "$(canon "${HOME:-/nonexistent}/.openmpi/components")"|"$(canon "$ompi_component_dir")")
        ;;
    *)
        # A custom --with-component-dir: Open MPI only looks there when told to.
        echo "quickstart: $componentdir is not searched by Open MPI by default; using"
        echo "  OMPI_MCA_mca_base_component_path=$ompi_component_dir:$componentdir"
        echo "for the check and the demo (set it yourself for your own runs)."
        export OMPI_MCA_mca_base_component_path="$ompi_component_dir:$componentdir"
        export PMIX_MCA_mca_base_component_path="$mpirun_path"
        found_by_default=0
        ;;
esac

step="checking that Open MPI sees the loom component"
say "$step (ompi_info | grep loom)"
ompi_out=$(ompi_info 2>&1) || die "ompi_info failed:
$ompi_out"
grep loom <<<"$ompi_out" ||
    die "ompi_info does not list loom although $componentdir/mca_coll_loom.so is installed; see why with: OMPI_MCA_mca_base_verbose=stdout,level:40 ompi_info | grep -i loom"
# Open MPI silently uses the first mca_coll_loom.so on its path: make sure it is
# the one just installed, not an older copy in another component directory.
verbose_out=$(OMPI_MCA_mca_base_verbose=stdout,level:40 ompi_info 2>&1) || true
loaded=$(sed -n 's|.*examining dynamic coll MCA component "loom" at path \(.*\)/mca_coll_loom$|\1|p' <<<"$verbose_out")
loaded=${loaded%%$'\n'*}
if [ -n "$loaded" ] && [ "$(canon "$loaded")" != "$(canon "$componentdir")" ]; then
    die "Open MPI loads loom from $loaded, not from the fresh install in $componentdir: remove the old copy ($loaded/mca_coll_loom.so, e.g. make uninstall in the tree that installed it) and re-run"
fi
echo "Open MPI loads mca_coll_loom.so from ${loaded:-$componentdir}"

# Open MPI 5.0's mpirun (PRRTE) may hand its processes a component path of its own
# (Debian 13: PMIx's plugin directory), which replaces Open MPI's default path and so
# hides $HOME/.openmpi/components.  A path set by the user is passed on unchanged.
if [ -z "${OMPI_MCA_mca_base_component_path:-}" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    step="checking the component path mpirun gives its processes"
    say "$step"
    mpirun_path=$(timeout 60 mpirun -np 1 env 2>/dev/null | sed -n 's/^OMPI_MCA_mca_base_component_path=//p' | sed 1q) || true
    if [ -n "$mpirun_path" ] && ! grep -qF "$componentdir" <<<"$mpirun_path"; then
        echo "quickstart: mpirun sets the component path of its processes to $mpirun_path,"
        echo "  which does not hold $componentdir: MPI programs started by mpirun would not see loom."
        echo "  Add these lines to your shell's startup file (~/.bashrc) and to job scripts (the"
        echo "  second keeps PMIx, to which mpirun passes the first, on its own plugins):"
        echo "    export OMPI_MCA_mca_base_component_path=$ompi_component_dir:$componentdir"
        echo "    export PMIX_MCA_mca_base_component_path=$mpirun_path"
        echo "  (docs/user/troubleshooting.md, \"loom is installed but not used\")."
        export OMPI_MCA_mca_base_component_path="$ompi_component_dir:$componentdir"
        found_by_default=0
    else
        echo "the processes mpirun starts search ${mpirun_path:-the default component path}: they see loom"
    fi
fi

# ---------------------------------------------------------------------------
if [ $run_demo -eq 1 ]; then
    step="demo (test/bench/run-demo.sh)"
    say "$step"
    [ -f test/bench/run-demo.sh ] || die "test/bench/run-demo.sh is missing"
    if [ "$(id -u)" -eq 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    export LOOM_SRCDIR="$PWD" LOOM_BUILDDIR="$PWD" LOOM_BENCH_DIR="$PWD/test/bench"
    export MPIRUN="$(sed -n 's/^MPIRUN = //p' Makefile)"
    bash test/bench/run-demo.sh
fi

say "done: loom is installed in $componentdir"
if [ $found_by_default -eq 1 ]; then
    echo "Every MPI program now runs with loom.  Exclude it with: mpirun --mca coll ^loom ..."
else
    echo "MPI programs run with loom when OMPI_MCA_mca_base_component_path=$ompi_component_dir:$componentdir"
    if [ -n "${mpirun_path:-}" ]; then
        echo "  (and, under this mpirun, PMIX_MCA_mca_base_component_path=$mpirun_path)"
    fi
fi
echo "Next: make check   (runs the whole test suite)"
