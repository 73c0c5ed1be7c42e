/*
 * file.h - opening an input file that must be a regular file: a FIFO, a
 * device or a directory named by mistake is refused at once instead of
 * blocking the reader (a FIFO with no writer) or being read without end.
 */
#ifndef STRATA_BASE_FILE_H
#define STRATA_BASE_FILE_H

#include <stdio.h>

/* path opened for reading ("rb"), or NULL with errno set and why[] saying
 * what is wrong ("PATH is a FIFO, not a regular file"; or strerror).
 * Opening never blocks. */
FILE *base_fopen_regular(const char *path, char *why, size_t len);

#endif
