#!/bin/bash
# loom: the "ssh" of the emulated cluster (mpirun --mca plm_rsh_agent agent.sh).
#
#   agent.sh [ssh-style -options] HOST COMMAND...
#
# Runs COMMAND (joined with spaces and given to /bin/sh -c, as ssh does) inside
# HOST's network namespace, in new UTS and IPC namespaces with the hostname set to
# HOST, a private tmpfs on /dev/shm, and the node's own boot_id bound over
# /proc/sys/kernel/random/boot_id (when the cluster made one).  The mounts live in
# the mount namespace `ip netns exec` creates, so they vanish with the command.
# The environment is passed through unchanged (OMPI_MCA_*, PATH, LD_LIBRARY_PATH...),
# unlike ssh.  HOST may be a node name (loomnodeI) or its address on the cluster
# subnet.

set -u
STATE=${LOOM_CLUSTER_STATE:-/run/loom-cluster}

# ssh options: skip them; those that take an argument skip it too
while [ $# -gt 0 ]; do
    case "$1" in
    -[BbcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
    -[BbcDEeFIiJLlmOoPpQRSWw]?*) shift ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "agent.sh: usage: agent.sh [-options] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
host=${host#*@}

ns=""
if [[ "$host" =~ ^loomnode[0-9]+$ ]]; then
    ns=$host
elif [[ "$host" =~ ^[0-9.]+$ ]] && [ -f "$STATE/subnet" ]; then
    sub=$(cat "$STATE/subnet")
    last=${host##*.}
    [ "${host%.*}" = "$sub" ] && ns=loomnode$((last - 1))
fi
if [ -z "$ns" ] || ! ip netns list | awk '{print $1}' | grep -qx "$ns"; then
    echo "agent.sh: $host is not a node of the emulated cluster (cluster.sh up N?)" >&2
    exit 255
fi

bootid=$STATE/boot_id.$ns
[ -f "$bootid" ] || bootid=""

# Inside: set up the node, then run the command as ssh would ($SHELL -c "$*").
setup='hostname "$1" || exit 255
mount -t tmpfs -o mode=1777,size=50% loomshm /dev/shm || exit 255
if [ -n "$2" ]; then mount --bind "$2" /proc/sys/kernel/random/boot_id 2>/dev/null || true; fi
shift 2
exec /bin/sh -c "$*"'

exec ip netns exec "$ns" unshare --uts --ipc -- /bin/sh -c "$setup" agent "$ns" "$bootid" "$*"
