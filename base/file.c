/* file.c - input files that must be regular files (see file.h). */
#include "config.h"
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a plain file";
}

FILE *base_fopen_regular(const char *path, char *why, size_t len)
{
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb)) {
        int e = errno;
        snprintf(why, len, "%s: %s", path, strerror(e));
        if (fd >= 0) close(fd);
        errno = e;
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, len, "%s is %s, not a regular file; give a file", path, kind_of(sb.st_mode));
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        snprintf(why, len, "%s: %s", path, strerror(e));
        close(fd);
        errno = e;
    }
    return f;
}
