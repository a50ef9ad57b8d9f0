# loom test helper, sourced by test/mpi/run-mpi-tests.sh and test/cluster/mpirun.sh.
#
#   deadline_run SECONDS PROGRAM -- COMMAND [ARGS...]
#
# Runs COMMAND (an mpirun that starts PROGRAM) and returns its exit status.  If it
# is still running after SECONDS, prints "TIMEOUT after SECONDS s" and, for every
# process running PROGRAM, where it is stuck (one line per thread: its innermost
# functions, from gdb when installed, else the kernel's wait channel), then stops
# COMMAND (TERM, KILL 10 s later) and returns 124.  A hang in CI then says where it
# hung instead of only that it did.

# stack_lines PID: one line per thread of PID, "pid P thread T: f0 < f1 < ... < f11",
# leaving out Open MPI's event-loop threads (they wait for events in any state)
stack_lines() {
    local pid=$1
    if command -v gdb >/dev/null 2>&1; then
        timeout 30 gdb -nx -batch -p "$pid" -ex 'thread apply all bt 12' 2>/dev/null |
            awk -v pid="$pid" '
                /^Thread [0-9]+ / { if (line != "") print line; line = "pid " pid " thread " $2 ":"; sep = " "; next }
                /^#[0-9]+ / {
                    s = $0
                    sub(/^#[0-9]+ +/, "", s)
                    sub(/^0x[0-9a-f]+ in /, "", s)
                    sub(/ \(.*/, "", s)
                    line = line sep s; sep = " < "
                }
                END { if (line != "") print line }' | grep -v ' event_base_loop < '
    else
        echo "pid $pid: wchan $(cat "/proc/$pid/wchan" 2>/dev/null), state $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) (no gdb for user-space stacks)"
    fi
}

# pids_running EXE: the PIDs whose executable is EXE (a resolved path)
pids_running() {
    local p
    for p in /proc/[0-9]*; do
        if [ "$(readlink "$p/exe" 2>/dev/null)" = "$1" ]; then
            echo "${p#/proc/}"
        fi
    done
}

deadline_run() {
    local tmo=$1 prog=$2 exe pid rc flag
    shift 3
    exe=$(readlink -f "$(command -v "$prog" 2>/dev/null || echo "$prog")")
    flag=$(mktemp "${TMPDIR:-/tmp}/loom-deadline.XXXXXX")
    "$@" &
    pid=$!
    (
        s=""
        trap 'kill $s 2>/dev/null; exit 0' TERM
        sleep "$tmo" &
        s=$!
        wait "$s"
        kill -0 "$pid" 2>/dev/null || exit 0
        echo timeout >"$flag"
        echo "TIMEOUT after ${tmo}s; where the processes of $exe are:" >&2
        for p in $(pids_running "$exe"); do
            stack_lines "$p" >&2
        done
        kill -TERM "$pid" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || exit 0
            sleep 1
        done
        kill -KILL "$pid" 2>/dev/null
    ) </dev/null &
    local dog=$! saved interrupted=0
    # a background job ignores SIGINT: pass an interruption of ours on to it
    saved=$(trap -p INT TERM)
    trap 'interrupted=1; kill -TERM "$pid" 2>/dev/null' INT TERM
    wait "$pid"
    rc=$?
    while [ $interrupted = 1 ] && kill -0 "$pid" 2>/dev/null; do
        wait "$pid"
    done
    trap - INT TERM
    eval "$saved"
    kill -TERM "$dog" 2>/dev/null
    wait "$dog" 2>/dev/null
    if [ -s "$flag" ]; then
        rc=124
    fi
    rm -f "$flag"
    if [ $interrupted = 1 ]; then
        kill -INT $$
    fi
    return $rc
}
