/*
 * cmds.h - subcommands of the strata tool that live in their own files.
 */
#ifndef STRATA_TOOLS_CMDS_H
#define STRATA_TOOLS_CMDS_H

int strata_cmd_ckpt(int argc, char **argv);   /* tools/ckpt_cmd.c */
int cmd_plan(int argc, char **argv);    /* tools/plan_cmd.c */
int cmd_plan_model(int argc, char **argv);   /* tools/plan_model_cmd.c: plan --model */
int cmd_trace(int argc, char **argv);   /* tools/trace_cmd.c */
int cmd_calibrate(int argc, char **argv);   /* tools/calibrate_cmd.c */
int cmd_flight(int argc, char **argv);   /* tools/flight_cmd.c */
int cmd_run(int argc, char **argv);      /* tools/run_cmd.c: the restarting supervisor */

#endif
