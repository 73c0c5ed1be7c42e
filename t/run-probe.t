#!/bin/sh
# run-probe.t - strata run when the launcher loses a host and names none
# (tools/run_hosts.c), with a stand-in launcher and rsh agent, no MPI:
#  - "unable to reliably start one or more daemons", then the launcher
#    hangs, and a process it left in a session of its own holds the
#    stderr pipe: the hosts are asked through the command's
#    --mca plm_rsh_agent, hB does not answer, the launcher is ended, the
#    pipe is not waited for, and the next run gets --host hA:2 on 2 ranks
#    (--global-batch 12 kept) within 15 s of the fault; nothing is left;
#  - a rank's "Peer host: hB" alone: the same, hB named;
#  - every host answers: no host is dropped, the job's own exit ends it;
#  - no host list: after 10 s of silence the peer's host counts as lost.
set -u
. "$top_srcdir/t/tap.sh"
tap_tmp run-probe
echo "1..12"
# the stand-in launcher: run 0 says what $MODE says and hangs; later runs
# print their arguments and end
cat > "$tmp/launch" <<'SH'
#!/bin/sh
if [ "$STRATA_RUN_RESTART" != 0 ]; then echo "run $STRATA_RUN_RESTART: $*"; exit 0; fi
setsid sleep 317 &
case $MODE in
daemon) echo "ORTE was unable to reliably start one or more daemons." >&2 ;;
peer)   printf '  Local host: hA\n  Peer host:  hB\n' >&2 ;;
esac
sleep 316
SH
# the stand-in agent: "agent HOST true" fails for the hosts in $DOWN
cat > "$tmp/agent" <<'SH'
#!/bin/sh
echo "$1" >> "$AGENT_LOG"
case " $DOWN " in *" $1 "*) exit 255 ;; esac
exec "$2"
SH
chmod +x "$tmp/launch" "$tmp/agent"
export AGENT_LOG="$tmp/asked"
none_left() { ! pgrep -f "sleep 31[67]" > /dev/null || { echo "# left running: $(pgrep -af 'sleep 31[67]')"; return 1; }; }

# sup MODE DOWN HOSTS...: strata run over the stand-in; its output in $tmp/out,
# the seconds it took in $secs
sup() {
    : > "$AGENT_LOG"
    t0=$(ms)
    MODE=$1 DOWN=$2 "$S" run --max-restarts 1 -- "$tmp/launch" -np 3 $3 --mca plm_rsh_agent "$tmp/agent" \
        prog --global-batch 12 --resume > "$tmp/out" 2>&1; rc=$?
    secs=$(( ($(ms) - t0) / 1000 ))
    sed 's/^/# /' "$tmp/out"
}
sup daemon "hB" "--host hA:2,hB:1"
check "a lost daemon, hB down: exit 0 after one restart ($rc, ${secs} s)" test "$rc" -eq 0
check "the probe line names hB and the agent" \
    grep -q "lost a daemon; host hB does not answer '$tmp/agent hB true': host hB counts as lost" "$tmp/out"
check "the next run: --host hA:2 on 2 ranks, global batch 12 kept" \
    sh -c 'grep -q "restart 1 of 1: host hB lost .* on 2 ranks (was 3), global batch 12 kept" "$1" &&
           grep -q "^run 1: -np 2 --host hA:2 " "$1"' _ "$tmp/out"
check "within 15 s, the process holding the pipe not waited for" test "$secs" -le 15
check "nothing of the job is left" none_left

sup peer "hB" "--host hA:2,hB:1"
check "a rank's peer on hB lost, hB down: one restart naming hB on 2 ranks ($rc, ${secs} s)" \
    sh -c 'test "$1" -eq 0 && grep -q "lost a rank.s peer; host hB does not answer" "$2" &&
           grep -q "^run 1: -np 2 --host hA:2 " "$2"' _ "$rc" "$tmp/out"
check "... within 15 s, both hosts asked" \
    sh -c 'test "$1" -le 15 && test "$(sort "$2" | tr "\n" " ")" = "hA hB "' _ "$secs" "$AGENT_LOG"

# every host answers: no host is lost; the hanging launcher is stopped by hand
: > "$AGENT_LOG"
MODE=daemon DOWN= "$S" run --max-restarts 1 -- "$tmp/launch" -np 3 --host hA:2,hB:1 \
    --mca plm_rsh_agent "$tmp/agent" prog > "$tmp/out" 2>&1 &
sp=$!
sleep 4; kill -TERM $sp; sleep 1; kill -TERM $sp; wait $sp; rc=$?
sed 's/^/# /' "$tmp/out"
check "every host answers: no host counts as lost, no restart" \
    sh -c '! grep -q "counts as lost\|restart 1" "$1" && test "$(wc -l < "$2")" -eq 2' _ "$tmp/out" "$AGENT_LOG"
stopped() { test "$rc" -ne 0 && none_left; }
check "... and a stop still ends it, nothing left ($rc)" stopped

sup peer "" ""
check "no host list: the peer's host counts as lost after 10 s of silence ($rc, ${secs} s)" \
    sh -c 'test "$1" -eq 0 && grep -q "lost its peer on host hB 10 s ago" "$2" &&
           grep -q "restart 1 of 1: host hB lost" "$2" && test ! -s "$3"' _ "$rc" "$tmp/out" "$AGENT_LOG"
check "... the launcher ended within 20 s" test "$secs" -le 20
check "... nothing left" none_left
