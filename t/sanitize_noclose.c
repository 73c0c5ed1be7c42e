/* t/sanitize_noclose.c - preloaded by t/check-sanitize.sh: dlclose does
 * nothing, so the libraries Open MPI, PMIx and UCX unload at exit stay
 * mapped and LeakSanitizer can name them in a report (an unloaded
 * library's frames print as "<unknown module>", which no suppression
 * matches). Not part of strata. */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
