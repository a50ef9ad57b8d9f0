#!/bin/bash
# loom: an emulated cluster on one machine, one network namespace per "node".
#
#   cluster.sh up N [--shape RATE] [--torus DIMS]
#                                    create nodes loomnode0..N-1 (idempotent)
#   cluster.sh down                  remove everything this script created
#   cluster.sh status                show the nodes, addresses and shaping
#
# Each node is a network namespace loomnodeI with `lo` up and one veth end `cl0`
# holding $SUBNET.(I+1)/24; the other ends join the bridge loombr0 in the root
# namespace, which holds $SUBNET.254/24 (mpirun and the node daemons talk over it).
# No default route in the nodes, IP forwarding untouched.  /etc/hosts gets one line
# per node, tagged "# loom-cluster", removed by `down`.  --shape RATE puts a tbf
# rate limit (e.g. 1gbit) on both directions of every node's link.  The node's
# hostname and private /dev/shm are set per job by agent.sh (they live in the
# job's mount/UTS namespaces, not here); the per-node boot_id files agent.sh binds
# are kept in the state directory.
#
# --torus DIMS (e.g. 4x4, 4x2x2; N must be their product; ":mesh" after a dimension
# leaves out its wrap-around links) also wires the nodes as a torus: node I sits at the
# row-major coordinates of I (dimension 0 slowest), and for every dimension d with more
# than one node it has a veth pair to its + neighbour (interface t<d>p there, t<d>m
# at the neighbour).  Each node holds the address $TSUBNET.(I+1)/16 on an interface
# tor0 of its own, and one /32 route per other node through the interface of the first
# hop of dimension-ordered routing (dimension 0 first, the shorter way around each ring,
# a tie the + way: loom's model, opal/loom/loom_torus.h), with forwarding on and
# reverse-path filtering off inside the nodes only.  So a message between nodes two
# hops apart crosses two links, and two messages routed over one link share it; MPI
# traffic takes these links with btl_tcp_if_include tor0 (mpirun.sh --torus), the
# runtime keeps the bridge.  --shape then shapes every torus link direction instead of
# the bridge links.  The coordinate file for coll_loom_torus_file is $STATE/torus.map.
#
# Environment: LOOM_CLUSTER_SUBNET (first three octets, default 10.213.37; must be
# a /24 nothing else on the machine uses), LOOM_CLUSTER_STATE (default
# /run/loom-cluster).
#
# Up twice with the same N gives the same cluster (the shaping is re-applied); up
# with a different N rebuilds it.  Down with nothing there succeeds.  A failed `up`
# removes what it created.  Names: namespaces loomnode*, bridge loombr0, veths
# loomv* (root side) -- nothing else is touched.

set -u

SUBNET=${LOOM_CLUSTER_SUBNET:-10.213.37}
TSUBNET=${LOOM_TORUS_SUBNET:-10.214.0}
STATE=${LOOM_CLUSTER_STATE:-/run/loom-cluster}
BR=loombr0
NSP=loomnode
VP=loomv
IFN=cl0
TAG="# loom-cluster"

die() { echo "cluster.sh: $*" >&2; exit 1; }

need_root() {
    [ "$(id -u)" = 0 ] || die "must run as root"
    command -v ip >/dev/null || die "ip (iproute2) not found"
}

# Our namespaces, in numeric order.
our_ns() {
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NSP}[0-9]+$" | sort -V
}

# Our root-side links (veths and the bridge).
our_links() {
    ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' \
        | grep -E "^(${VP}[0-9]+|${BR})$"
}

hosts_remove() {
    if grep -qF "$TAG" /etc/hosts 2>/dev/null; then
        # /etc/hosts may be a bind mount: rewrite in place, never replace the file
        local tmp
        tmp=$(mktemp) || return 1
        grep -vF "$TAG" /etc/hosts >"$tmp"
        cat "$tmp" >/etc/hosts
        rm -f "$tmp"
    fi
}

# Kill, by PID, what still runs inside our namespaces (a hung job).
kill_ns_pids() {
    local ns pids
    for ns in $(our_ns); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    return 0
}

do_down() {
    local ns l i
    kill_ns_pids
    for ns in $(our_ns); do
        ip netns del "$ns" 2>/dev/null
    done
    # the root-side veth ends vanish once the kernel finishes deleting the
    # namespaces (asynchronously); delete any that remain ourselves
    for l in $(our_links); do
        [ "$l" = "$BR" ] && continue
        ip link del "$l" 2>/dev/null
    done
    ip link del "$BR" 2>/dev/null
    hosts_remove
    rm -rf "$STATE"
    # wait for the asynchronous deletion, so the next `up` starts clean
    for i in $(seq 100); do
        [ -z "$(our_ns)" ] && [ -z "$(our_links)" ] && return 0
        sleep 0.1
    done
    echo "cluster.sh: still present after 10 s:" $(our_ns) $(our_links) >&2
    return 1
}

apply_shape() { # apply_shape N RATE|""
    local n=$1 rate=$2 i
    for i in $(seq 0 $((n - 1))); do
        if [ -n "$rate" ]; then
            # node -> bridge (egress of cl0) and bridge -> node (egress of the root-side end)
            tc -n "$NSP$i" qdisc replace dev "$IFN" root tbf rate "$rate" burst 256kb latency 10ms || return 1
            tc qdisc replace dev "$VP$i" root tbf rate "$rate" burst 256kb latency 10ms || return 1
        else
            tc -n "$NSP$i" qdisc del dev "$IFN" root 2>/dev/null
            tc qdisc del dev "$VP$i" root 2>/dev/null
        fi
    done
    return 0
}

# ---- the torus ------------------------------------------------------------------
# Parses DIMS into the arrays TD (sizes) and TM (1: mesh); echoes nothing.
torus_parse() {
    local spec=$1 part
    TD=(); TM=()
    for part in ${spec//[x,]/ }; do
        if [[ "$part" =~ ^([0-9]+)(:mesh)?$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ]; then
            TD+=("${BASH_REMATCH[1]}"); TM+=("$([ -n "${BASH_REMATCH[2]}" ] && echo 1 || echo 0)")
        else
            die "--torus: '$part' is not a dimension (N or N:mesh)"
        fi
    done
    [ ${#TD[@]} -ge 1 ] && [ ${#TD[@]} -le 6 ] || die "--torus: 1 to 6 dimensions"
}

# coords I: the row-major coordinates of node I (dimension 0 slowest), in C[]
coords() {
    local i=$1 d
    C=()
    for ((d = ${#TD[@]} - 1; d >= 0; d--)); do
        C[d]=$((i % TD[d])); i=$((i / TD[d]))
    done
}

index_of() { # index_of c0 c1 ...: the node index
    local i=0 d=0 c
    for c in "$@"; do i=$((i * TD[d] + c)); d=$((d + 1)); done
    echo "$i"
}

# the interface node I sends on towards node J first: t<d>p or t<d>m, or "" (J == I)
first_hop() {
    local i=$1 j=$2 d n fwd a b
    coords "$i"; local A=("${C[@]}")
    coords "$j"; local B=("${C[@]}")
    for ((d = 0; d < ${#TD[@]}; d++)); do
        a=${A[d]} b=${B[d]} n=${TD[d]}
        [ "$a" = "$b" ] && continue
        if [ "${TM[d]}" = 1 ]; then
            [ "$b" -gt "$a" ] && echo "t${d}p" || echo "t${d}m"
            return
        fi
        fwd=$(( ((b - a) % n + n) % n ))
        [ $((2 * fwd)) -le "$n" ] && echo "t${d}p" || echo "t${d}m"
        return
    done
    echo ""
}

# the neighbour of node I over interface t<d>p / t<d>m
neighbour() {
    local i=$1 ifc=$2 d=${2:1:1} dir=${2:2:1}
    coords "$i"
    if [ "$dir" = p ]; then C[d]=$(( (C[d] + 1) % TD[d] )); else C[d]=$(( (C[d] - 1 + TD[d]) % TD[d] )); fi
    index_of "${C[@]}"
}

torus_links() { # torus_links N DIMS: wire the nodes, address and route them
    local n=$1 spec=$2 i j d ns ifc nb total=1
    torus_parse "$spec"
    for d in "${TD[@]}"; do total=$((total * d)); done
    [ "$total" = "$n" ] || die "--torus $spec has $total nodes, not $n"
    [ "$n" -le 250 ] || die "--torus: at most 250 nodes"
    for ((i = 0; i < n; i++)); do
        ns=$NSP$i
        ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
            net.ipv4.conf.default.rp_filter=0
        # tor0 holds the node's address (a veth whose peer stays in the node: the
        # kernel may lack the dummy device)
        ip -n "$ns" link add tor0 type veth peer name tor0x
        ip -n "$ns" addr add "$TSUBNET.$((i + 1))/16" dev tor0
        ip -n "$ns" link set tor0x up
        ip -n "$ns" link set tor0 up
    done
    for ((i = 0; i < n; i++)); do
        coords "$i"
        for ((d = 0; d < ${#TD[@]}; d++)); do
            [ "${TD[d]}" -ge 2 ] || continue
            # a mesh dimension has no link from its last node round to its first
            [ "${TM[d]}" = 1 ] && [ "${C[d]}" = $((TD[d] - 1)) ] && continue
            nb=$(neighbour "$i" "t${d}p")
            ip link add "lt$i.$d" netns "$NSP$i" type veth peer name "lu$i.$d" netns "$NSP$nb"
            ip -n "$NSP$i" link set "lt$i.$d" name "t${d}p"
            ip -n "$NSP$nb" link set "lu$i.$d" name "t${d}m"
            ip -n "$NSP$i" link set "t${d}p" up
            ip -n "$NSP$nb" link set "t${d}m" up
        done
    done
    for ((i = 0; i < n; i++)); do
        for ((j = 0; j < n; j++)); do
            [ "$i" = "$j" ] && continue
            ifc=$(first_hop "$i" "$j")
            nb=$(neighbour "$i" "$ifc")
            ip -n "$NSP$i" route add "$TSUBNET.$((j + 1))/32" via "$TSUBNET.$((nb + 1))" dev "$ifc" onlink \
                src "$TSUBNET.$((i + 1))"
        done
        # rp_filter counts per interface too (the kernel takes the max of all and the interface)
        for ifc in $(ip -n "$NSP$i" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^t[0-9][pm]$'); do
            ip netns exec "$NSP$i" sysctl -qw "net.ipv4.conf.$ifc.rp_filter=0"
        done
    done
    { echo "# the emulated torus $spec (cluster.sh up $n --torus $spec)"
      echo "dims ${spec//x/ }"
      for ((i = 0; i < n; i++)); do coords "$i"; echo "$NSP$i ${C[*]}"; done; } >"$STATE/torus.map"
    echo "$spec" >"$STATE/torus"
}

torus_shape() { # torus_shape N RATE|"": tbf on both directions of every torus link
    local n=$1 rate=$2 i ifc
    for ((i = 0; i < n; i++)); do
        for ifc in $(ip -n "$NSP$i" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^t[0-9][pm]$'); do
            if [ -n "$rate" ]; then
                tc -n "$NSP$i" qdisc replace dev "$ifc" root tbf rate "$rate" burst 64kb latency 50ms || return 1
            else
                tc -n "$NSP$i" qdisc del dev "$ifc" root 2>/dev/null
            fi
        done
    done
    return 0
}

cluster_ok() { # cluster_ok N [TORUS]: all N nodes present, configured, reachable from the root
    local n=$1 torus=${2:-} i
    [ -f "$STATE/nodes" ] && [ "$(cat "$STATE/nodes")" = "$n" ] || return 1
    [ "$(cat "$STATE/torus" 2>/dev/null)" = "$torus" ] || return 1
    [ "$(our_ns | wc -l)" = "$n" ] || return 1
    ip link show "$BR" >/dev/null 2>&1 || return 1
    for i in $(seq 0 $((n - 1))); do
        ip -n "$NSP$i" -br addr show dev "$IFN" 2>/dev/null | grep -q "$SUBNET.$((i + 1))/24" || return 1
        [ -f "$STATE/boot_id.$NSP$i" ] || return 1
        grep -q "^$SUBNET.$((i + 1)) $NSP$i $TAG" /etc/hosts || return 1
    done
    return 0
}

do_up() {
    local n=$1 rate=$2 torus=${3:-} i ns
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "N must be 1..250"
    if cluster_ok "$n" "$torus"; then
        if [ -n "$torus" ]; then
            torus_shape "$n" "$rate" || die "tc failed"
        else
            apply_shape "$n" "$rate" || die "tc failed"
        fi
        echo "$rate" >"$STATE/shape"
        echo "cluster: $n nodes already up${torus:+ as a $torus torus}${rate:+, shaped to $rate}"
        return 0
    fi
    [ -z "$torus" ] || torus_parse "$torus"
    # something partial or of another size: start from nothing
    if [ -n "$(our_ns)$(our_links)" ] || grep -qF "$TAG" /etc/hosts || [ -d "$STATE" ]; then
        do_down || die "could not remove the previous cluster"
    fi
    # the subnet must be ours alone
    if ip -o addr show | grep -q " $SUBNET\."; then
        die "subnet $SUBNET.0/24 is already in use on this machine (set LOOM_CLUSTER_SUBNET)"
    fi

    trap 'echo "cluster.sh: up failed, cleaning up" >&2; trap - ERR; do_down; exit 1' ERR
    set -E
    mkdir -p "$STATE"
    ip link add "$BR" type bridge
    ip addr add "$SUBNET.254/24" dev "$BR"
    ip link set "$BR" up
    for i in $(seq 0 $((n - 1))); do
        ns=$NSP$i
        ip netns add "$ns"
        ip link add "$VP$i" type veth peer name "$IFN" netns "$ns"
        ip link set "$VP$i" master "$BR"
        ip link set "$VP$i" up
        ip -n "$ns" link set lo up
        # no TCP metrics cached per destination: a connection would start from the window
        # and reordering estimate of an earlier job's congested one (docs/dev/cluster.md)
        ip netns exec "$ns" sysctl -qw net.ipv4.tcp_no_metrics_save=1
        ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev "$IFN"
        ip -n "$ns" link set "$IFN" up
        cat /proc/sys/kernel/random/uuid >"$STATE/boot_id.$ns"
    done
    for i in $(seq 0 $((n - 1))); do
        echo "$SUBNET.$((i + 1)) $NSP$i $TAG"
    done >>/etc/hosts
    if [ -n "$torus" ]; then
        torus_links "$n" "$torus"
        torus_shape "$n" "$rate" || false
    else
        apply_shape "$n" "$rate" || false
    fi
    echo "$n" >"$STATE/nodes"
    echo "$rate" >"$STATE/shape"
    echo "$SUBNET" >"$STATE/subnet"
    # wait until every bridge port forwards (immediate without STP, but be sure)
    local fwd
    for _ in $(seq 50); do
        fwd=0
        for i in $(seq 0 $((n - 1))); do
            [ "$(cat "/sys/class/net/$VP$i/brport/state" 2>/dev/null)" = 3 ] && fwd=$((fwd + 1))
        done
        [ "$fwd" = "$n" ] && break
        sleep 0.1
    done
    trap - ERR
    set +E
    echo "cluster: $n nodes up ($NSP"0..$NSP$((n - 1))", $SUBNET.1-$n/24, bridge $BR $SUBNET.254)${torus:+, a $torus torus ($TSUBNET.1-$n/16 on tor0, map $STATE/torus.map)}${rate:+, shaped to $rate}"
}

do_status() {
    local ns
    if [ -z "$(our_ns)$(our_links)" ] && [ ! -d "$STATE" ]; then
        echo "cluster: down"
        return 0
    fi
    echo "cluster: $(cat "$STATE/nodes" 2>/dev/null || echo '?') nodes, shape: $(cat "$STATE/shape" 2>/dev/null | sed 's/^$/none/')"
    ip -br addr show dev "$BR" 2>/dev/null | sed 's/^/  /'
    for ns in $(our_ns); do
        printf '  %-11s %s  procs:%s  qdisc:%s\n' "$ns" \
            "$(ip -n "$ns" -br addr show dev "$IFN" 2>/dev/null | awk '{print $2, $3}')" \
            "$(ip netns pids "$ns" 2>/dev/null | wc -l)" \
            "$(tc -n "$ns" qdisc show dev "$IFN" 2>/dev/null | awk 'NR==1{print $2, ($2=="tbf" ? $8 : "")}')"
    done
    grep -F "$TAG" /etc/hosts | sed 's/^/  hosts: /'
    cluster_ok "$(cat "$STATE/nodes" 2>/dev/null || echo 0)" && echo "  state: ok" || { echo "  state: INCOMPLETE"; return 1; }
}

need_root
case "${1:-}" in
up)
    [ $# -ge 2 ] || die "usage: cluster.sh up N [--shape RATE] [--torus DIMS]"
    n=$2; shift 2; rate=""; torus=""
    while [ $# -gt 0 ]; do
        case "$1" in
        --shape) [ $# -ge 2 ] || die "--shape needs a rate (e.g. 1gbit)"; rate=$2; shift 2 ;;
        --shape=*) rate=${1#--shape=}; shift ;;
        --torus) [ $# -ge 2 ] || die "--torus needs dimensions (e.g. 4x4)"; torus=$2; shift 2 ;;
        --torus=*) torus=${1#--torus=}; shift ;;
        *) die "unknown option $1" ;;
        esac
    done
    do_up "$n" "$rate" "$torus"
    ;;
down) do_down && echo "cluster: down" ;;
status) do_status ;;
*) echo "usage: cluster.sh up N [--shape RATE] [--torus DIMS] | down | status" >&2; exit 2 ;;
esac
