/*
 * calibrate_none.c - `strata calibrate` in a build without CBLAS: the
 * command times sgemm, so there it only says what to install. The other
 * commands (the planner on a shipped hardware file among them) work.
 */
#include "config.h"

#include <stdio.h>

#include "tools/cmds.h"

int cmd_calibrate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "strata calibrate: this build has no CBLAS (configure found none), and calibrate times "
            "sgemm: install OpenBLAS (Debian: libopenblas-dev), run configure again and rebuild\n");
    return 2;
}
