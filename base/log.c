/* log.c - leveled logging with a rank prefix, to stderr. The level test
 * comes before any formatting (STRATA_LOG macro in base.h). */
#include "config.h"
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static const char *const level_name[] = { "ERROR", "WARN", "INFO", "DEBUG", "TRACE" };

/* Without a context the level comes from STRATA_LOG_LEVEL, read through
 * the option table (its default when unset or bad). */
static strata_log_level_t env_level(void)
{
    strata_config_t c;
    config_option_from_env(&c, "log_level");
    return c.log_level;
}

int base_log_enabled(const strata_context_t *ctx, strata_log_level_t level)
{
    return level <= (ctx ? ctx->cfg.log_level : env_level());
}

void base_log_raw(int rank, strata_log_level_t level, const char *fmt, va_list ap)
{
    char line[2048];
    int n = (rank >= 0)
        ? snprintf(line, sizeof line, "[strata r%d %s] ", rank, level_name[level])
        : snprintf(line, sizeof line, "[strata %s] ", level_name[level]);
    if (n < 0) return;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    /* one fputs per line so lines of different ranks/threads do not interleave */
    fprintf(stderr, "%s\n", line);
}

void strata_log(const strata_context_t *ctx, strata_log_level_t level, const char *fmt, ...)
{
    if (level < STRATA_LOG_ERROR || level > STRATA_LOG_TRACE) return;
    if (!base_log_enabled(ctx, level)) return;
    int rank = -1;
    if (ctx) {
        rank = ctx->rank;
    } else {
        int inited = 0, fin = 0;
        MPI_Initialized(&inited);
        MPI_Finalized(&fin);
        if (inited && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    va_list ap;
    va_start(ap, fmt);
    base_log_raw(rank, level, fmt, ap);
    va_end(ap);
}
