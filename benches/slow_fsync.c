/* A slower disk for the sync bench: fsync and fdatasync return only after the real call and
 * then MEMFRAME_BENCH_FSYNC_DELAY_US more microseconds. Loaded with LD_PRELOAD into every
 * server process of a run (old and new alike), so their ratios stay side by side. The wait is
 * a nanosleep in the calling thread, as a real disk's would be: a Python thread in SQLite has
 * released the GIL there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

static long delay_ns(void) {
    static long delay = -1;
    if (delay < 0) {
        const char *value = getenv("MEMFRAME_BENCH_FSYNC_DELAY_US");
        delay = value ? atol(value) * 1000L : 0;
    }
    return delay;
}

/* the real call's result, returned once the delay has passed (its errno kept) */
static int held(int result) {
    int saved = errno;
    long delay = delay_ns();
    struct timespec left = {delay / 1000000000L, delay % 1000000000L};
    while (delay > 0 && nanosleep(&left, &left) == -1 && errno == EINTR) {
    }
    errno = saved;
    return result;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return held(real(fd));
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return held(real(fd));
}
