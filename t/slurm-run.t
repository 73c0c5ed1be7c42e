#!/bin/sh
# slurm-run.t - examples/gpt/train_gpt.sbatch on a one-node Slurm that this test
# brings up on localhost (munged, slurmctld and slurmd, all configured and
# logging in a temporary directory, on ports of their own) and stops at its
# end, also when it fails:
#  - the script submitted as it is with 4 tasks runs to the end, COMPLETED;
#  - scancel --signal=USR1 --batch (what --signal=B:USR1@T sends before the
#    time limit) reaches the batch shell, which passes it on: the ranks write
#    a checkpoint and exit 0, the job requeues itself, the requeued run
#    resumes from that checkpoint and ends COMPLETED (job completion log);
#  - a direct srun --mpi=pmix launch of 4 ranks ends with the same param_hash
#    as the same run under t/launch;
#  - with --global-batch 12, a task killed at step 8 (test fault rank_kill,
#    armed on the first run only): the script's `strata run` reads srun's
#    report, runs srun again on 3 tasks from the step-5 checkpoint, and the
#    job ends COMPLETED (skipped without the test hooks).
# Skips where Slurm or munge is not installed or the user is not root (the
# daemons run as root here); where slurmctld is installed and the user is
# root, daemons that do not start are a failure.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"; SB="$top_srcdir/examples/gpt/train_gpt.sbatch"
for c in slurmctld slurmd munged sbatch srun; do
    command -v $c > /dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
    command -v $c > /dev/null 2>&1 || tap_skip_all "$c is not installed (Debian: slurm-wlm, munge)"
done
[ "$(id -u)" -eq 0 ] || tap_skip_all "the test's Slurm daemons run as root; this user is not"
tap_tmp slurm-t
chmod 700 "$tmp"
tap_cleanup() {
    # jobs first (their steps end with them), then the daemons
    [ -f "$tmp/slurmctld.pid" ] && scancel --full --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null
    for d in slurmd slurmctld munged; do
        [ -f "$tmp/$d.pid" ] && kill "$(cat "$tmp/$d.pid")" 2>/dev/null
    done
    sleep 1
}
trap 'exit 1' INT TERM HUP
echo "1..9"
show() { for f in "$@"; do [ -f "$f" ] && sed 's/^/# /' "$f" | tail -n 20; done; }

# KillWait: when a task dies, srun (--kill-on-bad-exit) sends the others
# SIGTERM, which train_gpt takes for a stop request: it waits for the dead
# rank in the step's agreement until SIGKILL comes KillWait seconds later
# (Slurm's default 30); strata run restarts once srun has ended.
# A requeued job may start again cred_expire seconds after its last run
# (Slurm's default 120): the test's cluster uses 15. Forcing an earlier
# start (scontrol update StartTime=now) raced slurmd's revocation of the
# last run's credential on a loaded machine: "Killing non-startable batch
# JobId=2: Job credential revoked", and the job FAILED.
# ports of this run's own (other runs of this test may be up at the same time)
port=$((20000 + $$ % 20000 * 2))
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 2> /dev/null && chmod 400 "$tmp/munge.key"
munged --force --key-file="$tmp/munge.key" --socket="$tmp/munge.sock" --pid-file="$tmp/munged.pid" \
    --log-file="$tmp/munged.log" --seed-file="$tmp/munged.seed"
sed "s|@TMP@|$tmp|g; s|@PORT@|$port|; s|@PORT1@|$((port + 1))|; s|@HOST@|$(hostname)|" > "$tmp/slurm.conf" <<'EOF'
ClusterName=stratatest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=@PORT@
SlurmdPort=@PORT1@
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=@TMP@/munge.sock,cred_expire=15
CredType=cred/munge
StateSaveLocation=@TMP@/state
SlurmdSpoolDir=@TMP@/spool
SlurmctldPidFile=@TMP@/slurmctld.pid
SlurmdPidFile=@TMP@/slurmd.pid
SlurmctldLogFile=@TMP@/slurmctld.log
SlurmdLogFile=@TMP@/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobCompType=jobcomp/filetxt
JobCompLoc=@TMP@/jobcomp.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
KillWait=5
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=strata1 NodeHostname=@HOST@ NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=strata1 Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -p "$tmp/state" "$tmp/spool"
export SLURM_CONF="$tmp/slurm.conf"
slurmctld -i && slurmd -N strata1
i=0
while [ $i -lt 100 ] && ! sinfo -h -o %t 2>/dev/null | grep -q idle; do sleep 0.2; i=$((i + 1)); done
if ! sinfo -h -o %t 2>/dev/null | grep -q idle; then
    echo "Bail out! slurmctld and slurmd installed but the one-node cluster did not come up"
    show "$tmp/munged.log" "$tmp/slurmctld.log" "$tmp/slurmd.log"
    exit 1
fi
# Open MPI on few cores: shared memory only, yield when idle (as t/launch);
# srun's plugin: PMIx for Open MPI, PMI-2 for the others (MPICH)
if [ "${MPI_FLAVOUR:-openmpi}" = openmpi ]; then
    export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
    export STRATA_SRUN_MPI=pmix
else
    export STRATA_SRUN_MPI=pmi2
fi
small="--layers 2 --dim 32 --heads 4 --batch 4"
state() { sed -n "s/^JobId=$1 .*JobState=\([A-Z_]*\) .*/\1/p" "$tmp/jobcomp.log" 2>/dev/null | tail -n 1; }
gone() {  # gone JOB: squeue answered, and the job is not in the queue. A squeue
          # that failed (slurmctld answering late on a loaded machine) says
          # nothing: taking its empty output for "gone" once ended a wait
          # while the requeued run was still starting.
    q=$(squeue -h -j "$1" -o %T 2>"$tmp/squeue.err"); rc=$?
    [ $rc -eq 0 ] && [ -z "$q" ] && return 0
    [ $rc -ne 0 ] && grep -q "Invalid job id" "$tmp/squeue.err"
}
finished() {  # finished JOB SECONDS: wait until the job left the queue
    j=$1; i=0
    while [ $i -lt $(($2 * 5)) ] && ! gone "$j"; do
        sleep 0.2; i=$((i + 1))
    done
    gone "$j"
}

# 1. the script as it is, 4 tasks, to the end
j1=$(STRATA_CKPT_DIR="$tmp/ck1" sbatch --parsable -n 4 -o "$tmp/run1.out" -D "$tmp" "$SB" $small --steps 10 --log-every 5)
finished "$j1" 120
show "$tmp/run1.out"
check "sbatch -n 4 train_gpt.sbatch: 4 ranks, 10 steps" \
    sh -c 'grep -q "^train_gpt: 4 ranks" "$1" && grep -q "^step  *10/10 " "$1" && grep -q "srun exited 0" "$1"' _ "$tmp/run1.out"
check "and the job COMPLETED (job completion log)" test "$(state "$j1")" = COMPLETED

# 2. a signal before the end: checkpoint, requeue, resume, COMPLETED
j2=$(STRATA_CKPT_DIR="$tmp/ck" sbatch --parsable -n 4 -o "$tmp/run2.out" -D "$tmp" "$SB" \
     $small --steps 4000 --log-every 10)
i=0
while [ $i -lt 600 ] && ! grep -q '^step  *10/' "$tmp/run2.out" 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
scancel --signal=USR1 --batch "$j2"
finished "$j2" 240
grep -v '^step' "$tmp/run2.out" | sed 's/^/# /'
stopped=$(sed -n 's/^train_gpt: stopped after step \([0-9]*\) of 4000 (SIGUSR1 received).*/\1/p' "$tmp/run2.out")
echo "# stopped after step ${stopped:-?}"
check "scancel --signal=USR1 --batch: the ranks stop after a step with its checkpoint" \
    sh -c 'test -n "$1" && test -f "$2/step-$(printf %08d "$1").h5"' _ "$stopped" "$tmp/ck"
check "the job requeued itself and the second run resumed from that checkpoint" \
    sh -c 'grep -q "requeueing job $1" "$2" && grep -q "run 1, .* --resume" "$2" &&
           grep -q "^resumed from .*step-$(printf %08d "$3").h5 at step $3" "$2"' _ "$j2" "$tmp/run2.out" "$stopped"
check "it ran to step 4000 and the job COMPLETED" \
    sh -c 'grep -q "^step  *4000/4000 " "$1" && test "$2" = COMPLETED' _ "$tmp/run2.out" "$(state "$j2")"
if ! grep -q "^step  *4000/4000 " "$tmp/run2.out"; then   # what the controller saw
    echo "# job completion log:"; show "$tmp/jobcomp.log"
    echo "# slurmctld.log:"; show "$tmp/slurmctld.log"
fi

# 3. srun directly, as the README shows; the same run under t/launch
timeout 120 srun --mpi="$STRATA_SRUN_MPI" -n 4 "$P" --threads 1 $small --steps 6 --json > "$tmp/srun.out" 2>&1
rc=$?
"$L" 4 "$P" --threads 1 $small --steps 6 --json > "$tmp/mpirun.out" 2>&1
echo "# param_hash: srun $(hash_of "$tmp/srun.out"), t/launch $(hash_of "$tmp/mpirun.out")"
[ $rc -eq 0 ] || show "$tmp/srun.out"
check "srun --mpi=$STRATA_SRUN_MPI -n 4 train_gpt exits 0" test $rc -eq 0
check "with the param_hash of the same run under mpirun" \
    sh -c 'test -n "$1" && test "$1" = "$2"' _ "$(hash_of "$tmp/srun.out")" "$(hash_of "$tmp/mpirun.out")"

# 4. a task killed: the script's strata run starts srun again on the 3 left
if [ "${test_hooks:-no}" = yes ]; then
    printf '#!/bin/sh\n[ "$STRATA_RUN_RESTART" = 0 ] || unset STRATA_TEST_FAULT\nexec "%s" "$@"\n' "$P" > "$tmp/arm"
    chmod +x "$tmp/arm"
    j4=$(STRATA_CKPT_DIR="$tmp/ck4" STRATA_TRAIN_GPT="$tmp/arm" STRATA_TOOL="$S" STRATA_TEST_FAULT=rank_kill@8 \
         sbatch --parsable -n 4 -o "$tmp/run4.out" -D "$tmp" "$SB" $small --global-batch 12 --steps 12 \
         --ckpt-every 5 --log-every 4)
    finished "$j4" 120
    grep -v '^step' "$tmp/run4.out" | sed 's/^/# /'
    sed -n 's/^strata run: restart .*; \([0-9.]*\) s after the fault;.*/# fault to restart under srun: \1 s (KillWait 5)/p' "$tmp/run4.out"
    check "a task killed under the script: one restart line (task 3), srun again on 3 tasks" \
        sh -c 'grep -q "^strata run: restart 1 of 3: rank 3 died (signal 9) .*; on 3 ranks (was 4), global batch 12 kept" "$1" &&
               grep -q "^resumed from .*step-00000005.h5 at step 5$" "$1" &&
               grep -q "^train_gpt: 3 ranks, .* batch 4 x 1 micro x 3 ranks = 12 rows/step" "$1"' _ "$tmp/run4.out"
    check "which runs to step 12, and the job COMPLETED" \
        sh -c 'grep -q "^step  *12/12 " "$1" && test "$2" = COMPLETED' _ "$tmp/run4.out" "$(state "$j4")"
else
    skip "a task killed under the script: restart on 3 tasks" "needs the test hooks (configure --enable-test-hooks)"
    skip "which runs to step 12, and the job COMPLETED" "needs the test hooks"
fi
