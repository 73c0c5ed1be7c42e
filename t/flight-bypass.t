#!/bin/sh
# flight-bypass.t - every blocking MPI call outside comm/ goes through the
# flight recorder, so it has a deadline: a grep over the sources finds none
# but the listed exceptions, each with its reason. The checker is first
# shown a file that breaks the rule, so it cannot pass by finding nothing.
set -u
. "$top_srcdir/t/tap.sh"
src="${top_srcdir:-.}"
tap_tmp bypass
calls='MPI_(Allreduce|Allgather|Allgatherv|Bcast|Barrier|Reduce|Reduce_scatter_block|Alltoall|Gather|Scatter|Wait|Waitall|Send|Recv|Sendrecv|Comm_split|Comm_dup|File_open|Init_thread|Init|Finalize)\('
# file: reason (a call there is allowed only with a reason)
cat > "$tmp/allowed" <<'LIST'
fsdp/context.c: MPI set-up and tear-down, before the recorder exists and after it is gone
io/ckpt_layout.c: runs inside a checkpoint save or load, one recorded operation under ckpt_timeout
io/ckpt_save.c: runs inside a checkpoint save, one recorded operation under ckpt_timeout
examples/gpt/train_gpt.c: the program's own MPI set-up and tear-down around the library
examples/mlp/mlp.c: the example's loss report, outside the library
examples/mlp/train_mlp.c: the example's loss and evaluation reports, outside the library
tools/calibrate_cmd.c: measures raw MPI on purpose; no strata context
tools/calibrate_costs.c: the same command's measurements of what collectives cost the compute, raw MPI on purpose
LIST
found() {   # files under $1 with a blocking MPI call, one a line, relative to $1
    (cd "$1" && grep -lE "$calls" base/*.c tiers/*.c io/*.c sched/*.c fsdp/*.c tools/*.c \
        examples/*/*.c 2>/dev/null) | sort -u
}
echo "1..3"
mkdir -p "$tmp/s/fsdp"
printf 'void f(void) { MPI_Barrier(c); }\n' > "$tmp/s/fsdp/x.c"
[ "$(found "$tmp/s")" = fsdp/x.c ] && echo "ok 1 - the checker finds a blocking MPI call" ||
    echo "not ok 1 - the checker finds a blocking MPI call"
bad=""
for f in $(found "$src"); do grep -q "^$f:" "$tmp/allowed" || bad="$bad $f"; done
[ -z "$bad" ] && echo "ok 2 - no blocking MPI call outside comm/ bypasses the recorder" ||
    echo "not ok 2 - no blocking MPI call outside comm/ bypasses the recorder (in:$bad)"
stale=""
for f in $(sed 's/:.*//' "$tmp/allowed"); do found "$src" | grep -qx "$f" || stale="$stale $f"; done
[ -z "$stale" ] && echo "ok 3 - every listed exception still has such a call" ||
    echo "not ok 3 - every listed exception still has such a call (stale:$stale)"
