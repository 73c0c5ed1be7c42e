# t/netns.sh - sourced by the multi-host tests (after t/tap.sh):
# "hosts" on this one machine, each its own network, UTS (hostname), PID
# and mount namespace, joined by veth links to a bridge, and mpirun across
# them with Open MPI's rsh launcher. t/README ("Multi-host tests") says why
# each namespace is needed.
#   netns_test TEST NAME...   the test's start: its directory $tmp (tap_tmp
#                       TEST) as the working directory, whatever the jobs
#                       leave there gone at exit, and netns_up NAME...
#   netns_up NAME...    one host per NAME (10.211.0.1, .2, ... in the order
#                       given; mpirun runs on none of them but on the
#                       switch, "launch", .254); skips the whole test,
#                       saying why, where the namespaces cannot be made.
#                       Everything is undone at exit (netns_down, from
#                       tap_cleanup), also when the test fails
#   netns_on NAME CMD...    CMD inside host NAME (its processes, hostname,
#                       network and /etc/hosts), from the test's directory;
#                       Open MPI's session files (a singleton's) in $tmp
#   netns_mpirun NP SPEC PROG ARGS...   mpirun across the hosts, NP ranks
#                       placed by SPEC ("h1:2,h2:2": slots in hostfile order,
#                       by node), TCP between hosts, shared memory within one
#                       ($netns_btl, when set, replaces Open MPI's btl list)
#   netns_mpi_flags SPEC   those mpirun flags, for a command that runs
#                       mpirun itself (a supervisor), under
#   netns_launch CMD... CMD where mpirun runs, under STRATA_TEST_TIMEOUT
#   netns_kill NAME     SIGKILL to every process of host NAME (its PID
#                       namespace's init): the whole host is gone
#   netns_unplug NAME   its link down at the switch: unreachable, no reset
#   netns_restart NAME  host NAME again (same name and address, nothing
#                       running), as after a reboot
#   netns_kill_launch   SIGKILL to mpirun and whatever else runs where it
#                       runs (after a job whose mpirun did not end)
#   netns_pid NAME      the host side pid of NAME's init
# Only Open MPI's launcher is wired here; another MPI skips.
netns_sw= netns_bg=
netns_net=10.211.0
# how long a namespace lives at most: its init exits then, so a test killed
# with SIGKILL (which runs no cleanup) leaves nothing behind for long
netns_life=$(( ${STRATA_TEST_TIMEOUT:-600} + 60 ))

netns_child() {     # the forked child of unshare $1 (the namespace's init)
    tap_i=0
    while [ $tap_i -lt 100 ]; do
        tap_c=$(cat "/proc/$1/task/$1/children" 2>/dev/null | cut -d' ' -f1)
        [ -n "$tap_c" ] && { echo "$tap_c"; return 0; }
        sleep 0.05; tap_i=$((tap_i + 1))
    done
    return 1
}

netns_pid() { sed -n "s/^$1 //p" "$tmp/netns/pids" | tail -1; }   # a host made again: its last

netns_on() {
    tap_h=$1; shift
    OMPI_MCA_orte_tmpdir_base="$tmp/netns" \
        nsenter -t "$(netns_pid "$tap_h")" --net --uts --pid --mount --wd="$PWD" -- "$@"
}

# SIGKILL to every process in the switch's network namespace: mpirun and
# anything else started there (they are in this machine's PID namespace,
# so the switch's end would not take them along)
netns_kill_launch() {
    [ -n "$netns_sw" ] || return 0
    tap_ns=$(readlink "/proc/$netns_sw/ns/net") || return 0
    for tap_p in /proc/[0-9]*; do
        tap_p=${tap_p#/proc/}
        case " $netns_sw $netns_bg " in *" $tap_p "*) continue ;; esac   # the switch itself
        [ "$(readlink "/proc/$tap_p/ns/net" 2>/dev/null)" = "$tap_ns" ] && kill -9 "$tap_p" 2>/dev/null
    done
    return 0
}

# the launch processes, then every host's init and the switch's (their
# namespaces, veths and bridge go with them); unshare --kill-child kills
# an init whose unshare dies
netns_down() {
    netns_kill_launch
    for tap_p in $netns_bg; do kill -9 "$tap_p" 2>/dev/null; done
    for tap_p in $netns_bg; do wait "$tap_p" 2>/dev/null; done
    netns_bg=
}

netns_kill() { kill -9 "$(netns_pid "$1")"; }
# host $1's cable pulled: its link on the switch down, so nothing reaches
# it or comes back, and no connection is reset (as when a host loses power)
netns_unplug() { nsenter -t "$netns_sw" --net ip link set "v$(netns_pid "$1")" down; }
# host $1 again, after netns_kill: same name and address, a fresh machine
netns_restart() { netns_host "$1" "$(sed -n "s/^$netns_net\.\([0-9]*\) $1\$/\1/p" "$tmp/netns/hosts")"; }

# the namespaces cannot be made: the whole test skips, saying why; once
# checks have run (a host made again), the test bails out instead
netns_fail() {
    [ "$n" -eq 0 ] && tap_skip_all "$*"
    echo "Bail out! $*"; exit 1
}

netns_need() {
    [ "$(id -u)" = 0 ] || tap_skip_all "multi-host tests need root (network, UTS, PID and mount namespaces)"
    for tap_t in unshare nsenter ip pgrep; do
        command -v $tap_t > /dev/null 2>&1 || tap_skip_all "multi-host tests need $tap_t (util-linux, iproute2, procps)"
    done
    [ "${MPI_FLAVOUR:-openmpi}" = openmpi ] ||
        tap_skip_all "multi-host tests launch with Open MPI's rsh agent; this MPI is ${MPI_FLAVOUR}"
    unshare --net --uts --pid --mount --fork --mount-proc true 2> "$tmp/netns.err" ||
        tap_skip_all "cannot make namespaces here: $(head -1 "$tmp/netns.err")"
    unshare --net ip link add name va type veth peer name vb 2> "$tmp/netns.err" ||
        tap_skip_all "cannot make veth links here: $(head -1 "$tmp/netns.err")"
}

# the switch: a bridge in a network namespace of its own, which is also
# where mpirun runs ("launch", 10.211.0.254; on none of the hosts: the
# hostfile names only these). Its UTS and mount namespaces give it its own
# name and the test's /etc/hosts; it stays in this machine's PID namespace,
# the parent of the hosts', so that the rsh agent may enter theirs (setns
# enters only a descendant PID namespace). The hosts are made from it and
# inherit its /etc/hosts.
netns_switch() {
    unshare --net --uts --mount --kill-child \
        sh -c 'hostname launch && mount --bind "$1" /etc/hosts && exec sleep "$2"' _ "$tmp/netns/hosts" "$netns_life" \
        2>> "$tmp/netns/switch.err" &
    netns_bg="$netns_bg $!"
    netns_sw=$(netns_child $!) || netns_fail "the switch's namespace did not start"
    netns_wait "$netns_sw" launch
    nsenter -t "$netns_sw" --net sh -c 'ip link set lo up && ip link add br0 type bridge && ip link set br0 up &&
        ip addr add "$1.254/24" dev br0' _ "$netns_net" \
        2> "$tmp/netns.err" || tap_skip_all "cannot make a bridge: $(head -1 "$tmp/netns.err")"
}

netns_wait() {      # until $1's hostname is $2 and its /etc/hosts the test's
    tap_i=0
    while [ "$(nsenter -t "$1" --uts hostname 2>/dev/null)" != "$2" ] ||
          ! nsenter -t "$1" --mount grep -q " $2\$" /etc/hosts 2>/dev/null; do
        [ $tap_i -lt 100 ] || netns_fail "host $2's hostname or /etc/hosts was not set"
        sleep 0.05; tap_i=$((tap_i + 1))
    done
}

# host $1 ($2: its address's last byte), linked to the switch. Its init
# (pid 1, "sh -c ... netns-init SECONDS NAME") is a shell that waits, and so reaps the
# processes a killed launcher leaves to it, as a real init does.
netns_host() {
    nsenter -t "$netns_sw" --mount -- unshare --net --uts --pid --mount --fork --mount-proc --kill-child \
        sh -c 'hostname "$2" || exit 1; sleep "$1" & wait' netns-init "$netns_life" "$1" 2>> "$tmp/netns/$1.err" &
    netns_bg="$netns_bg $!"
    tap_p=$(netns_child $!) || netns_fail "host $1's namespaces did not start: $(tail -1 "$tmp/netns/$1.err")"
    echo "$1 $tap_p" >> "$tmp/netns/pids"
    netns_wait "$tap_p" "$1"
    nsenter -t "$netns_sw" --net sh -c \
        'ip link add "v$1" type veth peer name eth0 netns "$1" && ip link set "v$1" master br0 up' _ "$tap_p" \
        2> "$tmp/netns.err" || netns_fail "cannot link host $1: $(head -1 "$tmp/netns.err")"
    nsenter -t "$tap_p" --net sh -c 'ip link set lo up && ip addr add "$1/24" dev eth0 && ip link set eth0 up' \
        _ "$netns_net.$2" 2> "$tmp/netns.err" || netns_fail "cannot address host $1: $(head -1 "$tmp/netns.err")"
}

# the rsh agent: Open MPI calls it as AGENT [OPTIONS] HOST COMMAND...
netns_agent() {
    cat > "$tmp/netns/agent" <<EOF
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
pid=\$(sed -n "s/^\$1 //p" "$tmp/netns/pids" | tail -1); shift
[ -n "\$pid" ] || { echo "netns agent: no such host" >&2; exit 255; }
# a clean environment, as ssh gives: what a rank needs comes with mpirun -x
exec nsenter -t "\$pid" --net --uts --pid --mount -- env -i PATH="\$PATH" HOME=/root sh -c "\$*"
EOF
    chmod +x "$tmp/netns/agent"
}

netns_test() {
    tap_tmp "$1"; shift
    cd "$tmp" || exit 1
    tap_cleanup() { netns_down; }
    netns_up "$@"
}

netns_up() {
    netns_need
    # a test ended by a signal runs its EXIT trap (tap_cleanup) too
    trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM
    mkdir -p "$tmp/netns"
    : > "$tmp/netns/pids"
    printf '127.0.0.1 localhost\n%s.254 launch\n' "$netns_net" > "$tmp/netns/hosts"
    tap_i=1
    for tap_h; do echo "$netns_net.$tap_i $tap_h" >> "$tmp/netns/hosts"; tap_i=$((tap_i + 1)); done
    netns_switch
    netns_k=1
    for netns_h; do netns_host "$netns_h" $netns_k; netns_k=$((netns_k + 1)); done
    netns_agent
    # every name resolves where mpirun runs
    for tap_h; do
        nsenter -t "$netns_sw" --mount getent hosts "$tap_h" > /dev/null ||
            tap_skip_all "launch cannot resolve $tap_h through its /etc/hosts"
    done
}

# the flags mpirun needs across the hosts, ranks placed by SPEC (writes
# the hostfile): the rsh agent, TCP on the hosts' subnet, vader within one
netns_mpi_flags() {
    echo "$1" | tr ',' '\n' | sed 's/:\(.*\)/ slots=\1/' > "$tmp/netns/hostfile"
    echo "--hostfile $tmp/netns/hostfile --bind-to none --mca plm_rsh_agent $tmp/netns/agent" \
        "--mca orte_tmpdir_base $tmp/netns --mca pml ob1 --mca btl ${netns_btl:-tcp,self,vader}" \
        "--mca btl_tcp_if_include $netns_net.0/24 --mca oob_tcp_if_include $netns_net.0/24"
}

# CMD where mpirun runs (the switch, on none of the hosts), under the
# test's timeout
netns_launch() {
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 \
    timeout -k 5 "${STRATA_TEST_TIMEOUT:-120}" \
        nsenter -t "$netns_sw" --net --uts --mount --wd="$PWD" -- "$@"
}

netns_mpirun() {
    tap_np=$1; tap_f=$(netns_mpi_flags "$2"); shift 2
    # shellcheck disable=SC2086
    netns_launch "${MPIRUN:-mpirun}" -np "$tap_np" $tap_f "$@"
}
