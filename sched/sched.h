/*
 * sched.h - deciding when things run: the step program, activation
 * policies, the link model, the per-engine schedule (latency-hiding or
 * naive), its simulator, the automatic plan, when training state on
 * storage is fetched, and the trace format with its writer.
 * Internal (not installed). Everything here is pure: no MPI, no memory
 * tiers, no threads except the trace writer's lock, so it is tested alone.
 *
 * Error convention: functions that can fail return strata_status_t and
 * write a message a person can act on into (err, errlen) (err may be
 * NULL); out-parameters end in _p and are written only on success.
 *
 * Life of a run, as the runtime (fsdp/) uses it:
 *   step 1: sched_record_begin / _unit / _save / _cost / _end while it runs
 *           the step plainly (everything kept, or naive), timing every op;
 *   then:   sched_policy_parse(cfg->act_policy) -> sched_policy_resolve (or
 *           sched_plan_auto for "auto") -> sched_build -> sched_simulate for
 *           the prediction; sched_plan_print once;
 *   step k: execute the schedule's per-engine orders (see sched_op_t) and
 *           check each save against the recording with sched_check_save /
 *           sched_check_unit, failing at once on a deviation.
 *
 * Executing a schedule: each engine takes the ops of sched_engine_order()
 * strictly in order; an op is issued once every op in its deps has
 * completed (deps on the same engine are implied by the order; the others
 * are events). An op that allocates (AG, H2D, S2H, D2H's host copy) must
 * not take its memory before its deps complete: with the tiers, which
 * allocate when a move is queued, queue it then, not earlier; that is what
 * keeps the device under sched_device_bound(). An offloaded save is held as
 * one block per chunk (op offset/bytes), so chunks pipeline and free one by
 * one. sched_save_action() says what to do with each save (the schedule may
 * keep a tail unit's offload on device). Frees happen at op ends: F(u)
 * frees its gathered params and its recompute saves, a D2H chunk its device
 * copy (a move with release_src), B(u) the params and every save of u,
 * RS(u) the unsharded gradients.
 */
#ifndef STRATA_SCHED_H
#define STRATA_SCHED_H

#include <stddef.h>
#include <stdio.h>

#include "strata.h"

/* Write a message into err (may be NULL) and return st: the error
 * convention above, for sched/ and the tools built on it. */
strata_status_t sched_fail(char *err, size_t errlen, strata_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define SCHED_NAME_MAX  48    /* bytes of a save or unit name, with the NUL */
#define SCHED_MAX_NAMES 64    /* distinct save names in one program */
#define SCHED_MAX_CHUNKS 64   /* a transfer is split into at most this many chunks */

/* ------------------------------------------------------------------------ */
/* The step program                                                          */
/* ------------------------------------------------------------------------ */

/* The name under which a unit's input -- the tensor the unit before it
 * made, or the step's input for the first unit -- is a save of the unit:
 * it waits on the device from F(u) to B(u) like any save, so it can be
 * kept, moved to host or storage. It is on the device outside that
 * interval too: from the forward of the unit that made it, and from B(u)
 * to the end of that unit's backward, which reads it as its output.
 * Recompute of inputs works in pairs (a unit's recompute starts from its
 * input, so not every input can be made again): under the action
 * recompute, the input of every odd unit u is dropped after F(u) and made
 * again before its backward by REGEN(u-1) -- the forward of unit u-1 run
 * once more from its own input, which stays kept, for its output only --
 * while the inputs of the even units are kept. Only a rule naming the
 * input asks for that: '*=recompute' and sched_actions_fill keep inputs
 * (the classic checkpoint at every unit's input). */
#define SCHED_INPUT_NAME STRATA_UNIT_INPUT

typedef struct {
    char   name[SCHED_NAME_MAX];
    int    name_id;           /* index into the program's distinct names */
    int    is_input;          /* named SCHED_INPUT_NAME: the unit's input */
    size_t bytes;
    double cost_s;            /* producing cost: seconds a recompute takes to make
                               * it again from what the unit holds (see
                               * sched_recompute_seconds); 0 = not recorded */
} sched_save_t;

typedef enum {
    SCHED_COST_FWD = 0,       /* forward compute of the unit */
    SCHED_COST_BWD,           /* backward compute */
    SCHED_COST_AG,            /* all-gather of its parameters */
    SCHED_COST_RS,            /* reduce-scatter of its gradients */
    SCHED_COST_COUNT
} sched_cost_t;

/* Resources that ops on different engines share. sched_simulate runs the
 * ops that draw on one at once at their share of it (processor sharing):
 *   LINK  the host link with both directions busy (a GPU's bidirectional
 *         rate, below the sum of the two directions on PCIe);
 *   CE    the copy engines: offload copies, and collectives where they run
 *         on copy engines (NCCL's zero-CTA policy);
 *   HBM   device memory bandwidth: copies read or write it beside the
 *         compute's memory-bound ops;
 *   NIC   the network card, shared by the collectives of several groups
 *         (FSDP's and EP's) where they cross NVLink domains.
 * A transfer (D2H, H2D) draws its bytes on LINK, CE and HBM; compute ops
 * and collectives draw what the program records (sched_record_cost_res). */
typedef enum { SCHED_RES_LINK = 0, SCHED_RES_CE, SCHED_RES_HBM, SCHED_RES_NIC, SCHED_RES_COUNT } sched_res_t;
const char *sched_res_name(sched_res_t r);   /* "link", "copy_engines", "hbm", "nic" */

typedef struct {
    char          name[SCHED_NAME_MAX];   /* for printing; "" = "u<index>" */
    double        cost_s[SCHED_COST_COUNT];
    size_t        ag_bytes;   /* gathered parameters on device while it runs;
                               * its unsharded gradients take as much again
                               * from B(u) until RS(u) completes */
    int           nsaves;
    sched_save_t *saves;      /* in the order the forward saved them */
    int           save_costs; /* 1 once any save's cost_s was recorded */
    /* set by sched_record_unit_mem (mem_set = 1); else the unsharded
     * gradients are ag_bytes and the output and input gradient are not
     * in the program (counted in resident_bytes, if at all) */
    int           mem_set;
    size_t        grad_bytes; /* unsharded gradients from B(u) until RS(u) ends */
    size_t        out_bytes;  /* its output, from F(u) until B(u) ends */
    size_t        gin_bytes;  /* the gradient of its input, from B(u) until
                               * B(u-1) ends (none for unit 0) */
    size_t        work_bytes[2];   /* workspace while F(u) and RECOMPUTE(u)
                                    * run, [0], and B(u), [1] */
    /* bytes each op of the unit moves through each shared resource
     * (sched_record_cost_res; 0 = none): [SCHED_COST_FWD] also for its
     * RECOMPUTE and REGEN, at the forward's rate */
    double        res_bytes[SCHED_COST_COUNT][SCHED_RES_COUNT];
} sched_unit_t;

typedef struct sched_program {
    int           nunits;
    sched_unit_t *units;      /* forward order */
    size_t        resident_bytes;  /* always on device: shards, optimizer
                                    * state if on device, workspace */
    size_t        reserve_bytes;   /* the part of resident_bytes kept free
                                    * against fragmentation: counted against
                                    * the budget, never predicted as used */
    double        optim_s;    /* optimizer step on the local shards */
    int           nnames;     /* distinct save names, first-seen order */
    char          names[SCHED_MAX_NAMES][SCHED_NAME_MAX];
    int           recording;  /* between record_begin and record_end */
    int           cap_units;
} sched_program_t;

strata_status_t sched_program_create(sched_program_t **prog_p);
void sched_program_destroy(sched_program_t *prog);          /* NULL-safe */

/* Recording, in the order a step runs: begin, then per unit (forward
 * order) unit + its saves, costs whenever measured, end. record_begin
 * forgets a previous recording. */
strata_status_t sched_record_begin(sched_program_t *prog);
/* Appends a unit; *unit_p receives its index. name may be NULL. */
strata_status_t sched_record_unit(sched_program_t *prog, const char *name, size_t ag_bytes,
                                  int *unit_p, char *err, size_t errlen);
/* A save of the most recently recorded unit. */
strata_status_t sched_record_save(sched_program_t *prog, const char *name, size_t bytes,
                                  char *err, size_t errlen);
/* The bytes op `which` of unit `unit` moves through resource `res` (see
 * sched_res_t): with opts' share_bw[res] set, its demand there is these
 * bytes over its seconds. The runtime records none. */
strata_status_t sched_record_cost_res(sched_program_t *prog, int unit, sched_cost_t which,
                                      sched_res_t res, double bytes, char *err, size_t errlen);
/* The producing cost (seconds) of save `save` of unit `unit` (also after
 * end): from then on RECOMPUTE(unit) is the sum of its recompute-action
 * saves' costs instead of F(unit) (sched_recompute_seconds). */
strata_status_t sched_record_save_cost(sched_program_t *prog, int unit, int save, double seconds,
                                       char *err, size_t errlen);
/* The unit's unsharded-gradient, output, input-gradient and workspace
 * bytes (also after end); see sched_unit_t. work may be NULL (none). */
strata_status_t sched_record_unit_mem(sched_program_t *prog, int unit, size_t grad_bytes,
                                      size_t out_bytes, size_t gin_bytes, const size_t work[2],
                                      char *err, size_t errlen);
/* The index of the unit's input save (SCHED_INPUT_NAME), or -1. */
int sched_unit_input(const sched_unit_t *u);
/* The device bytes of unit u's output that the program models: its
 * out_bytes where set, else the next unit's input save (what the runtime
 * records), else 0 (resident). */
size_t sched_unit_out_bytes(const sched_program_t *prog, int u);
/* Unsharded gradient bytes of a unit: grad_bytes once set, else ag_bytes. */
size_t sched_unit_grad_bytes(const sched_unit_t *u);
/* Set a measured cost (seconds) of any recorded unit (also after end). */
strata_status_t sched_record_cost(sched_program_t *prog, int unit, sched_cost_t which,
                                  double seconds, char *err, size_t errlen);
strata_status_t sched_record_end(sched_program_t *prog, size_t resident_bytes, double optim_s,
                                 char *err, size_t errlen);

/* Checking a later step against the recording, as it runs: the index-th
 * save of unit `unit` must have the recorded name and size; at the end of
 * a unit's forward it must have saved exactly the recorded number
 * (nsaves); at the end of the forward, nunits units must have run.
 * STRATA_ERR_MISMATCH with a precise message on the first deviation. */
strata_status_t sched_check_save(const sched_program_t *ref, int unit, int index,
                                 const char *name, size_t bytes, char *err, size_t errlen);
strata_status_t sched_check_unit(const sched_program_t *ref, int unit, int nsaves,
                                 size_t ag_bytes, char *err, size_t errlen);
strata_status_t sched_check_end(const sched_program_t *ref, int nunits, char *err, size_t errlen);
/* Whole-program comparison (structure only: units, names, sizes, order;
 * costs may differ): the first deviation, as the checks above word it. */
strata_status_t sched_program_compare(const sched_program_t *ref, const sched_program_t *now,
                                      char *err, size_t errlen);

/* Index of a distinct save name, or -1. */
int sched_program_name_id(const sched_program_t *prog, const char *name);
/* Bytes all units save under name id `id` in one step. */
size_t sched_program_name_bytes(const sched_program_t *prog, int id);
/* "qkv, mlp_up, attn_out" into buf; returns buf. */
const char *sched_program_name_list(const sched_program_t *prog, char *buf, size_t len);
void sched_program_print(const sched_program_t *prog, FILE *out);

/*
 * A program described in text (strata plan, tests). Lines; '#' starts a
 * comment; sizes take k/M/G suffixes, times are seconds:
 *   resident SIZE                   always-resident device bytes
 *   optim SECONDS                   optimizer step time
 *   unit NAME [fwd=S] [bwd=S] [ag=S] [rs=S] [ag_bytes=SIZE] [repeat=N]
 *   save NAME SIZE [cost=S]         a save of the unit above; cost: its
 *                                   producing cost (sched_record_save_cost)
 * repeat=N makes N copies of the unit with its saves (named NAME0..).
 */
strata_status_t sched_program_parse(const char *text, sched_program_t **prog_p,
                                    char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Policies                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum {
    SCHED_KEEP = 0,          /* stays on device from F(u) to B(u) */
    SCHED_HOST,              /* D2H after F(u), H2D before B(u) */
    SCHED_STORAGE,           /* D2H then H2S; S2H then H2D */
    SCHED_RECOMPUTE,         /* dropped after F(u); the unit's forward runs
                              * again right before B(u) and recreates it */
    SCHED_ACTION_COUNT
} sched_action_t;

const char *sched_action_name(sched_action_t a);   /* "keep", ... */
/* What action (of its name) means for save sv of unit `unit`: recompute
 * of a unit's input (SCHED_INPUT_NAME) holds for odd units and keeps the
 * input of even ones (see SCHED_INPUT_NAME); anything else stands. */
sched_action_t sched_save_effective(int unit, const sched_save_t *sv, int action);

/*
 * Recompute semantics: a unit is recomputed when any of its saves has a
 * name whose action is recompute. Its recompute-action saves are freed at
 * the end of F(u); its other saves follow their own action (this is how
 * the input a re-run needs survives: save it under a name that is kept or
 * offloaded). Before B(u) the other saves are brought back, then the
 * re-run RECOMPUTE(u) recreates the recompute-action saves on device
 * (re-saves of the other names are discarded by the runtime), then B(u).
 * RECOMPUTE(u) costs sched_recompute_seconds: the producing costs of only
 * the recompute-action saves when they are recorded, else F(u). A unit's
 * input is not made by its own RECOMPUTE but by REGEN(u-1) (see
 * SCHED_INPUT_NAME), which costs F(u-1): its kept saves are written
 * again in place (with the same values), the others go to scratch that
 * lives only while it runs.
 */

typedef struct {
    int is_auto;
    int has_default;
    sched_action_t dflt;      /* '*' ; keep when absent */
    int nrules;
    struct { char name[SCHED_NAME_MAX]; sched_action_t action; } rules[SCHED_MAX_NAMES];
} sched_policy_t;

/* "qkv=host, mlp_up=storage, *=keep" or "auto"; whitespace is ignored
 * around names, '=' and ','. Empty text = "*=keep". Errors: bad action,
 * missing '=', empty name, duplicate name. */
strata_status_t sched_policy_parse(const char *text, sched_policy_t *pol_p,
                                   char *err, size_t errlen);

/* One action per distinct name of a program (index = name id). */
typedef struct {
    int nnames;
    sched_action_t action[SCHED_MAX_NAMES];
} sched_actions_t;

/* 1 when unit u's forward runs again before B(u+1) to make the next
 * unit's input (REGEN(u)): that input's effective action is recompute. */
int sched_unit_regen(const sched_program_t *prog, const sched_actions_t *acts, int u);

/* Seconds of RECOMPUTE(unit) under acts: 0 when no save of the unit has
 * a recompute action; else, when the unit's saves carry producing costs,
 * the sum of the recompute-action saves' cost_s (recompute at name
 * granularity: what is kept or offloaded is not made again); else the
 * whole forward, F(unit). */
double sched_recompute_seconds(const sched_program_t *prog, int unit, const sched_actions_t *acts);
/* The same over the unit's saves' actions act[0..nsaves). */
double sched_unit_recompute_seconds(const sched_unit_t *x, const sched_action_t *act);

/* Apply a (non-auto) policy to a program: unknown names are an error that
 * lists the names the program saves. */
strata_status_t sched_policy_resolve(const sched_policy_t *pol, const sched_program_t *prog,
                                     sched_actions_t *acts_p, char *err, size_t errlen);
/* Every name the same action. */
void sched_actions_fill(sched_actions_t *acts, const sched_program_t *prog, sched_action_t a);
/* "qkv=host,mlp_up=keep" (a policy string that round-trips). */
const char *sched_actions_string(const sched_actions_t *acts, const sched_program_t *prog,
                                 char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Link model and options                                                    */
/* ------------------------------------------------------------------------ */

typedef enum {
    SCHED_COMPUTE = 0,
    SCHED_COMM,
    SCHED_D2H,
    SCHED_H2D,
    SCHED_IO,                 /* host <-> storage, both directions */
    SCHED_ENGINE_COUNT
} sched_engine_t;

const char *sched_engine_name(sched_engine_t e);   /* "compute", "comm", "d2h", "h2d", "io" */

/* As the tiers' copy engines pace copies: latency once per copy plus
 * bytes / bandwidth; bandwidth 0 = unpaced (the copy takes no time). */
typedef struct {
    double d2h_bw, h2d_bw, storage_bw;   /* bytes per second */
    double latency;                      /* seconds per copy (per chunk) */
    size_t chunk;                        /* transfers split at this size; 0 = whole */
} sched_link_t;

double sched_link_time(const sched_link_t *link, sched_engine_t engine, size_t bytes);


/* The sharing rule, pure: n ops run at once, op i drawing demand[i][r]
 * bytes per second of resource r when it runs at full speed; cap[r] is
 * what r carries in all (<= 0: not shared, never a limit). speed[i]
 * receives the fraction of full speed op i runs at: the smallest, over
 * the resources it draws on, of min(1, cap / the sum of the demands on
 * it) where two or more ops draw on it -- every op on a saturated
 * resource slowed by the same factor; an op alone keeps its own rate
 * (its seconds are what it takes alone). */
void sched_share_speeds(int n, const double (*demand)[SCHED_RES_COUNT],
                        const double cap[SCHED_RES_COUNT], double *speed);

/* lhs: transfers and collectives placed to hide behind compute; naive:
 * one transfer at a time, compute waiting for each right after producing
 * / right before using; none: nothing overlaps at all -- every op waits
 * for the one before it, collectives included, as a compiler without a
 * latency-hiding scheduler runs a step (a model for strata plan; the
 * runtime runs lhs or naive). */
typedef enum { SCHED_MODE_LHS = 0, SCHED_MODE_NAIVE = 1, SCHED_MODE_NONE = 2 } sched_mode_t;
const char *sched_mode_name(sched_mode_t m);

typedef struct {
    sched_mode_t mode;
    size_t budget[STRATA_TIER_COUNT];   /* per tier; 0 = unlimited */
    sched_link_t link;
    int prefetch;            /* all-gather lookahead in units (config prefetch) */
    int lookahead;           /* activation prefetch: at most this many compute
                              * ops ahead of the op that needs it */
    double share_bw[SCHED_RES_COUNT];   /* bytes/s each shared resource carries in
                              * all; 0 = not shared (the default: ops on
                              * different engines never slow each other, and
                              * the simulation is the plain one, bit for bit) */
} sched_opts_t;

/* Defaults: lhs, unlimited budgets, unpaced link, prefetch 1, lookahead 8. */
void sched_opts_defaults(sched_opts_t *opts);
/* From the config table: schedule, device/host/storage_mem, link_*,
 * chunk_size, prefetch. STRATA_ERR_CONFIG on an unknown schedule name. */
strata_status_t sched_opts_from_config(const strata_config_t *cfg, sched_opts_t *opts_p,
                                       char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* The schedule                                                              */
/* ------------------------------------------------------------------------ */

typedef enum {
    SCHED_OP_AG = 0,          /* comm: all-gather params of a use of unit */
    SCHED_OP_F,               /* compute: forward */
    SCHED_OP_D2H,             /* d2h: one chunk of a save, device -> host */
    SCHED_OP_H2S,             /* io:  that chunk, host -> storage */
    SCHED_OP_S2H,             /* io:  storage -> host */
    SCHED_OP_H2D,             /* h2d: host -> device */
    SCHED_OP_RECOMPUTE,       /* compute: forward again, before B */
    SCHED_OP_B,               /* compute: backward */
    SCHED_OP_RS,              /* comm: reduce-scatter of the unit's grads */
    SCHED_OP_OPTIM,           /* compute: optimizer on the local shards */
    SCHED_OP_REGEN,           /* compute: F(u) again for its output only,
                               * before B(u+1) (the next unit's input) */
    SCHED_OP_COUNT
} sched_op_kind_t;

const char *sched_op_kind_name(sched_op_kind_t k);

/*
 * One op. Memory effects, in bytes per tier: mem_alloc is taken when the op
 * starts, mem_free released when it ends (a D2H chunk frees its device
 * copy at its end; B(u) frees the unit's params and saves; RS(u) its
 * gradients; F(u) its forward params and recompute-action saves). Frees
 * are implied by op ends: there is no separate FREE op.
 */
typedef struct {
    sched_op_kind_t kind;
    sched_engine_t  engine;
    int    unit;              /* -1 for OPTIM */
    int    save;              /* index into the unit's saves; -1 if none */
    int    chunk, nchunks;    /* chunk of the save's transfer */
    size_t offset, bytes;     /* chunk's span within the save; AG: params */
    double seconds;           /* predicted duration */
    int    pos;               /* compute ops: position in compute order */
    int    ndeps;
    const int *deps;          /* op ids that must complete before it starts */
    size_t mem_alloc[STRATA_TIER_COUNT];
    size_t mem_free[STRATA_TIER_COUNT];
} sched_op_t;

typedef struct sched sched_t;

/*
 * Build the schedule of one step. Fails with STRATA_ERR_TIER_FULL when no
 * schedule of this policy fits the device budget (the message gives the
 * smallest device budget this policy needs), STRATA_ERR_INVALID on an
 * empty or still-recording program or actions of another program.
 * lhs builds a few variants (chunked or not, the last T units' offloads
 * kept on device for T = 0, 1, 2, 4.. while that fits) and keeps the one
 * the simulator finds fastest, so lhs is never slower than
 * naive in simulation. The device budget holds structurally: every
 * allocating op waits (deps) until its bytes are free in any timing.
 */
strata_status_t sched_build(const sched_program_t *prog, const sched_actions_t *acts,
                            const sched_opts_t *opts, sched_t **sched_p, char *err, size_t errlen);
void sched_destroy(sched_t *s);   /* NULL-safe */

int  sched_nops(const sched_t *s);
const sched_op_t *sched_op(const sched_t *s, int id);
/* The issue order of one engine: *n_p op ids. */
const int *sched_engine_order(const sched_t *s, sched_engine_t e, int *n_p);
/* The device bytes the schedule may use at most, in any timing. */
size_t sched_device_bound(const sched_t *s);
/* The mode it was built in; how many of the last units' offloaded saves
 * the lhs schedule keeps on device instead (their backward comes first,
 * before a round trip could finish; chosen by simulation within budget). */
sched_mode_t sched_mode(const sched_t *s);
int sched_tail_kept(const sched_t *s);
/* What the schedule does with save `save` of unit `unit`: the policy's
 * action, except KEEP where lhs keeps a tail unit's offload on device.
 * The executor follows this, not the policy. -1 on bad indices. */
int sched_save_action(const sched_t *s, int unit, int save);
/* Take the compute and collective costs (F, RECOMPUTE, B, AG, RS, OPTIM)
 * from the program again, e.g. after sched_record_cost with newer
 * measurements, so that sched_simulate predicts with them; the orders,
 * dependencies and transfers stay as built. NULL-safe no-op. */
void sched_update_costs(sched_t *s);
/* "D2H u3 qkv [2/8]" */
const char *sched_op_label(const sched_t *s, int id, char *buf, size_t len);
/* Readable per-engine list: every op, its duration and what it waits for. */
void sched_print(const sched_t *s, FILE *out);

/* The smallest device budget any schedule of this policy needs. */
size_t sched_min_device(const sched_program_t *prog, const sched_actions_t *acts,
                        const sched_opts_t *opts);

/* ------------------------------------------------------------------------ */
/* Simulation                                                                */
/* ------------------------------------------------------------------------ */

typedef struct {
    double step_s;
    double busy_s[SCHED_ENGINE_COUNT];
    double transfer_s;           /* summed durations of d2h, h2d and io ops */
    double exposed_transfer_s;   /* compute idle while only transfers were pending */
    double comm_wait_s;          /* compute idle waiting on comm */
    double overlap_frac;         /* 1 - exposed/transfer (1 when no transfers) */
    size_t peak[STRATA_TIER_COUNT];   /* device: with the program's reserve_bytes */
    size_t device_reserve;       /* of peak[DEVICE]: kept free, not used */
} sched_result_t;

/* Run the schedule in simulated time: each engine runs its ops in order,
 * an op starts when its engine is free and its deps have completed.
 * start/end (may be NULL) receive each op's times (sched_nops entries).
 * STRATA_ERR_STATE if the orders and deps deadlock. */
strata_status_t sched_simulate(const sched_t *s, sched_result_t *res_p, double *start,
                               double *end, char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Automatic plan                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Choose an action per name that fits opts' budgets with the lowest
 * predicted step time (ties: the earlier action, keep < host < storage <
 * recompute, name by name). Exhaustive over 4^names when that is at most
 * 1024 plans, else a deterministic greedy + local search. Fails with
 * STRATA_ERR_TIER_FULL naming the smallest device budget that would fit.
 */
strata_status_t sched_plan_auto(const sched_program_t *prog, const sched_opts_t *opts,
                                sched_actions_t *acts_p, sched_result_t *pred_p,
                                char *err, size_t errlen);
/* The smallest device budget at which some plan fits. */
size_t sched_plan_min_device(const sched_program_t *prog, const sched_opts_t *opts);
/* Per name: action, bytes per step; predicted peaks per tier, step time. */
void sched_plan_print(const sched_program_t *prog, const sched_actions_t *acts,
                      const sched_result_t *pred, FILE *out);
/* Measured values beside the predictions, after a step. */
void sched_plan_print_measured(const sched_result_t *pred, const sched_result_t *meas, FILE *out);
/* The device bytes a prediction expects the step to use: its peak less
 * the reserve kept free against fragmentation. */
static inline size_t sched_device_use(const sched_result_t *r)
{
    return r->peak[STRATA_TIER_DEVICE] - r->device_reserve;
}

/* ------------------------------------------------------------------------ */
/* Fetching training state from storage                                      */
/* ------------------------------------------------------------------------ */

/*
 * Training state homed on the storage tier comes up to the host for each
 * use, read by the storage engine one fetch after another in the order
 * they were issued. The step is a sequence of compute positions (the
 * runtime's: forward and backward of each unit, per micro-batch, then the
 * updates), position q taking pos_s[q] seconds; a fetch is issued at the
 * start of a position, before that position's work, and a use at the start
 * of its position must find its bytes up or waits.
 *
 * The rule, for each use in order:
 * - the default: one position before its use (so a gather's master comes
 *   one unit beyond the all-gather prefetch, an update's state one unit
 *   ahead), never before `earliest`, at 0 for a use at 0. That is what the
 *   runtime always did, and what is returned while nothing is known: all
 *   positions 0 s (no costs recorded) or the bandwidth unknown (<= 0).
 * - with costs and bandwidth: as late as lets it complete before its use,
 *   with the engine serving the fetches in use order, each taking
 *   bytes / storage_bw (the latest start of each is found from the last
 *   use back: it must also end before the next one's latest start); never
 *   later than the default, never before `earliest`. A fetch no position
 *   can hide is issued as early as `earliest` allows (the use then waits).
 * - the host room: fetched bytes waiting for their use (from the position
 *   of the fetch up to, not including, its use's) may not exceed `room`
 *   at any position, the earlier uses served first; a fetch that would
 *   exceed it moves later, down to the default, which is always allowed.
 */
typedef struct {
    int       pos;         /* the compute position at whose start it is used */
    int       earliest;    /* no fetch before this position (the previous use
                            * of the same buffer sends it down there) */
    int       unit;        /* for messages */
    long long bytes;       /* read from storage */
} sched_fetch_use_t;

/* at[i] (nuses entries) receives the position at whose start use i's fetch
 * is issued: earliest <= at[i] <= pos. Uses in non-decreasing pos order;
 * pos_s: npos >= 1 non-negative seconds; room >= 0 bytes. wait_s_p (may be
 * NULL) receives sched_state_fetch_wait of the result. STRATA_ERR_INVALID
 * with a message on bad input. */
strata_status_t sched_state_fetch(const sched_fetch_use_t *uses, int nuses, const double *pos_s,
                                  int npos, double storage_bw, long long room, int *at,
                                  double *wait_s_p, char *err, size_t errlen);
/* The seconds the uses wait for their fetches when issued at at[] (input
 * as above, not checked): positions run in order, each after the waits of
 * its uses; the engine serves fetches in issue order at storage_bw (<= 0:
 * instantly). */
double sched_state_fetch_wait(const sched_fetch_use_t *uses, int nuses, const double *pos_s,
                              int npos, double storage_bw, const int *at);

/* ------------------------------------------------------------------------ */
/* Trace: Chrome trace-event JSON, one file per rank (opens in Perfetto)    */
/* ------------------------------------------------------------------------ */

/*
 * Format written (ts and dur in microseconds):
 *   {"traceEvents":[
 *    {"ph":"M","name":"process_name","pid":R,"tid":0,"args":{"name":"rank R"}},
 *    {"ph":"M","name":"thread_name","pid":R,"tid":T,"args":{"name":"compute"}},
 *    {"ph":"X","name":"F","cat":"compute","pid":R,"tid":1,"ts":..,"dur":..,
 *     "args":{"unit":3,"name":"qkv","bytes":1024}},
 *    {"ph":"X","name":"step","cat":"step","pid":R,"tid":0,"ts":..,"dur":..,"args":{"step":1}},
 *    {"ph":"C","name":"memory","pid":R,"ts":..,"args":{"device":..,"host":..,"storage":..}}
 *   ]}
 * tid 0 is the step track, tid 1 + engine the engines; "cat" is the engine
 * name, which is what the reader (tools/trace_read.c) goes by.
 */
typedef struct sched_trace sched_trace_t;

strata_status_t sched_trace_create(int rank, sched_trace_t **tr_p);
void sched_trace_destroy(sched_trace_t *tr);   /* NULL-safe */
/* Thread-safe; times in seconds on any monotonic clock. name is the op
 * kind ("F", "D2H", ...); save may be NULL; unit -1 = none. */
strata_status_t sched_trace_op(sched_trace_t *tr, sched_engine_t engine, const char *name,
                               double start_s, double dur_s, int unit, const char *save,
                               size_t bytes);
strata_status_t sched_trace_step(sched_trace_t *tr, int step, double start_s, double dur_s);
strata_status_t sched_trace_memory(sched_trace_t *tr, double t_s,
                                   const size_t bytes[STRATA_TIER_COUNT]);
/* Write everything recorded so far (the file is rewritten whole). */
strata_status_t sched_trace_write(sched_trace_t *tr, const char *path, char *err, size_t errlen);
/* Record a simulated step: ops at their simulated times + t0, memory
 * counters, and a step event. */
strata_status_t sched_trace_add_sim(sched_trace_t *tr, const sched_t *s, int step, double t0,
                                    char *err, size_t errlen);

/* Reading traces back and analysing them (`strata trace`) is tools/'s:
 * tools/trace.h. */

#endif
