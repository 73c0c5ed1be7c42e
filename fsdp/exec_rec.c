/* exec_rec.c - the executor's transfer waits as flight-recorder operations:
 * the unit and bytes come from the schedule op, so a stuck transfer is
 * reported by name like a stuck collective. */
#include "config.h"
#include "fsdp.h"
#include "exec_impl.h"

strata_status_t fsdp_xfer_wait(strata_model_t *m, strata_event_t *ev, int id)
{
    const fsdp_exec_t *x = m->exec;
    const sched_op_t *o = x && x->sched ? sched_op(x->sched, id) : NULL;
    if (o) comm_rec_where(m->ctx, -1, o->unit);
    rec_op_t op = comm_rec_begin(m->ctx, NULL, REC_XFER, o ? o->bytes : 0, STRATA_F32);
    comm_rec_waiting(m->ctx, op);
    strata_status_t st = strata_event_wait(ev);
    comm_rec_end(m->ctx, op, st);
    return st;
}
