/* unit_group.t - the pure geometry of shard and replica groups. */
#include "comm/comm.h"
#include "tap.h"

int main(void)
{
    plan(9);
    comm_layout_t l;
    ok(0 == comm_group_layout(8, 4, 6, &l) && l.shard_group == 1 && l.shard_rank == 2 &&
       l.replica_group == 2 && l.replica_rank == 1 && l.n_shard_groups == 2, "W=8 S=4 rank 6");
    ok(0 == comm_group_layout(128, 128, 77, &l) && l.shard_group == 0 && l.shard_rank == 77 &&
       l.replica_rank == 0, "S = W is one shard group (plain FSDP)");
    ok(0 == comm_group_layout(4, 1, 3, &l) && l.shard_rank == 0 && l.replica_rank == 3 &&
       l.n_shard_groups == 4, "S = 1 is data parallel");
    ok(-1 == comm_group_layout(6, 4, 0, &l), "S not dividing W is refused");
    ok(-1 == comm_group_layout(4, 0, 0, &l), "S = 0 refused");
    ok(-1 == comm_group_layout(4, 2, 4, &l), "rank out of range refused");
    ok(-1 == comm_group_layout(4, 2, 0, NULL), "NULL out refused");
    /* every rank lands in exactly one (shard, replica) cell */
    int seen[16] = { 0 }, good = 1;
    for (int r = 0; r < 16; r++) {
        comm_group_layout(16, 4, r, &l);
        seen[l.shard_group * 4 + l.replica_group]++;
        good &= l.shard_group * 4 + l.shard_rank == r;
    }
    for (int i = 0; i < 16; i++) good &= seen[i] == 1;
    ok(good, "W=16 S=4: a bijection between ranks and (shard group, shard rank)");
    ok(0 == comm_group_layout(1, 1, 0, &l), "a single rank");
    return done_testing();
}
