/*
 * proc.h - whether a process recorded by pid (in a lock or an owner file)
 * is still the one that wrote the record, on this host (Linux /proc).
 */
#ifndef STRATA_BASE_PROC_H
#define STRATA_BASE_PROC_H

/* The start time of process pid in clock ticks since boot (/proc/PID/stat
 * field 22); 0 when there is no such process or it cannot be read. */
unsigned long long base_proc_start(long pid);

/* Why process pid, recorded with start time `start` (0: not recorded), is
 * provably gone: no such process, a zombie (exited, not yet reaped), or a
 * process that started at another time (the pid was reused). NULL when it
 * may be alive. */
const char *base_proc_gone(long pid, unsigned long long start);

#endif
