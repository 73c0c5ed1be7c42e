/*
 * recorder.h - the flight recorder and its watchdog (internal to comm/ and
 * the layers above it).
 *
 * Every collective, every wait on a transfer and every blocking MPI call of
 * the library is one operation in a fixed ring per rank (flight_entries
 * rows): begin when it is asked for, start when the backend has it, end
 * when it completes. Each operation has a deadline (collective_timeout; a
 * whole checkpoint save or load ckpt_timeout, and what runs inside it
 * inherits that deadline). One watchdog thread per rank sleeps while
 * nothing is outstanding and otherwise until the oldest deadline; past it,
 * it writes the rank's flight record, prints one report and aborts the job
 * (exit code STRATA_EXIT_TIMEOUT). SIGTERM and SIGUSR2 make it write the
 * record too (SIGTERM then ends the process as before). Format: docs/flight.md.
 */
#ifndef STRATA_COMM_RECORDER_H
#define STRATA_COMM_RECORDER_H

#include "base/base.h"

/* The exit code of a job ended by the watchdog (MPI_Abort's errorcode). */
#define STRATA_EXIT_TIMEOUT 75

typedef enum {
    REC_ALLGATHER = 0, REC_REDUCE_SCATTER, REC_ALLREDUCE, REC_BROADCAST, REC_BARRIER,
    REC_CHECK,          /* the small allreduce of comm_check */
    REC_XFER,           /* a wait on a tier transfer */
    REC_CKPT_SAVE, REC_CKPT_LOAD,
    REC_MPI,            /* any other blocking MPI call */
    REC_KIND_COUNT
} rec_kind_t;

/* An operation's handle; 0 = not recorded (recorder off). */
typedef uint64_t rec_op_t;

/* Create the context's recorder and start its watchdog (after comm_init
 * made the world group); destroy stops both. flight_entries = 0: none. */
strata_status_t comm_rec_create(strata_context_t *ctx);
void comm_rec_destroy(strata_context_t *ctx);

/* Give a group its name in the record ("world", "shard0", "replica1", ...)
 * and its per-group sequence counter. */
void comm_rec_group(strata_group_t *g, const char *name);
/* The group is being destroyed: the watchdog no longer aborts it. */
void comm_rec_ungroup(strata_group_t *g);

/* Where the rank is: the step and unit the next operations belong to
 * (-1 = none). Cheap; the fsdp layer calls it as it goes. */
void comm_rec_where(strata_context_t *ctx, int step, int unit);

/* One operation: begin (enqueued), started (the backend has it), waiting
 * (the rank blocks on it), end.
 * g may be NULL (not a group's collective). */
rec_op_t comm_rec_begin(strata_context_t *ctx, strata_group_t *g, rec_kind_t kind,
                        size_t bytes, strata_dtype_t dtype);
void comm_rec_started(strata_context_t *ctx, rec_op_t op);
void comm_rec_end(strata_context_t *ctx, rec_op_t op, strata_status_t st);
/* The rank now blocks until op completes (a wait, or a blocking call). */
void comm_rec_waiting(strata_context_t *ctx, rec_op_t op);

/* Wait for an MPI request with the recorder's back-off (base_mpi_wait):
 * MPI_Test spins for spin_time, then sleeps doubling up to 100 us between
 * tests, so a rank waiting on a stalled peer does not hold a core. */
strata_status_t comm_wait_backoff(strata_context_t *ctx, MPI_Request *req, const char *what);
/* The same with its own spin time (seconds, at least spin_time's). */
strata_status_t comm_wait_spin(strata_context_t *ctx, MPI_Request *req, const char *what,
                               double spin);
/* The same for n requests at once (MPI_Testall). */
strata_status_t comm_wait_all(strata_context_t *ctx, MPI_Request *reqs, int n, const char *what,
                              double spin);

/* A fatal error the rank cannot recover from (e.g. an asynchronous NCCL
 * error): write the flight record, print why once, abort the backend's
 * communicators and the job. Does not return. */
void comm_rec_fatal(strata_context_t *ctx, const char *why) __attribute__((noreturn));

/* Write the rank's flight record now (reason: "timeout", "sigusr2", ...).
 * Path: <flight_dir>/flight.<rank>.json. */
strata_status_t comm_rec_dump(strata_context_t *ctx, const char *reason);

/* A line of text for the record's "notes" (a straggler named, ...): the
 * first REC_MAX_NOTES are kept; a no-op with the recorder off. */
void comm_rec_note(strata_context_t *ctx, const char *text);

const char *comm_rec_kind_name(rec_kind_t kind);

#endif
