/* recorder_impl.h - the recorder's state, shared by recorder.c (the ring
 * and the dump) and watchdog.c (the thread, signals, deadlines). */
#ifndef STRATA_COMM_RECORDER_IMPL_H
#define STRATA_COMM_RECORDER_IMPL_H

#include "comm/recorder.h"

typedef enum { REC_FREE = 0, REC_ENQUEUED, REC_STARTED, REC_WAITING, REC_DONE, REC_FAILED } rec_state_t;

typedef struct {
    uint64_t    index;        /* global position + 1 (0 = never used) */
    uint64_t    seq;          /* per-group sequence number (1-based) */
    int         kind, group, step, unit, state, status, dtype;
    size_t      bytes;
    double      t_enq, t_start, t_end, deadline;
} rec_entry_t;

#define REC_MAX_GROUPS 8
#define REC_MAX_NOTES  8
#define REC_NOTE_LEN   400

typedef struct comm_recorder {
    strata_context_t *ctx;
    pthread_mutex_t   lock;
    pthread_mutex_t   dump_lock;     /* one dump at a time: snap, path and the .tmp */
    rec_entry_t      *ring, *snap;   /* snap: the dump's copy, allocated once */
    size_t            n;
    uint64_t          next;          /* operations begun */
    uint64_t          check_seq;     /* sequence of ops outside groups */
    int               step, unit;
    int               ngroups;
    char              gname[REC_MAX_GROUPS][16];
    strata_group_t   *gptr[REC_MAX_GROUPS];   /* live groups (NULL once destroyed) */
    int               gsize[REC_MAX_GROUPS], grank[REC_MAX_GROUPS];
    double            ckpt_deadline; /* > 0 while a save/load is open */
    double            ckpt_start;    /* when the open save/load began */
    int               ckpt_depth;
    double            t0_wall;       /* wall clock minus monotonic, at create */
    int               nnotes;        /* comm_rec_note's lines, under lock */
    char              notes[REC_MAX_NOTES][REC_NOTE_LEN];
    /* watchdog */
    pthread_t         thread;
    int               running, stop;
    int               idle;          /* the thread sleeps until woken (atomic) */
    int               pipe_r, pipe_w;
    /* the latest time this process did not run (its watchdog woke this
     * much later than it asked to: SIGSTOP, a debugger, CPU starvation);
     * under lock */
    double            pause_s, pause_end;
    double            wake_t;        /* when the thread was last asked to wake (atomic) */
    char              path[1100];    /* the dump file */
} comm_recorder_t;

/* watchdog.c */
strata_status_t rec_watchdog_start(comm_recorder_t *r);
void rec_watchdog_stop(comm_recorder_t *r);
void rec_watchdog_wake(comm_recorder_t *r);

#endif
