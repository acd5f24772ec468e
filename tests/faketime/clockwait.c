/*
 * Preloaded beside libfaketime by `make test-dates` (see the Makefile).
 *
 * libfaketime shifts every clock a process reads, the monotonic one too, and
 * converts the deadlines of the waits it knows (sem_timedwait,
 * pthread_cond_timedwait, ...). Debian's libfaketime 0.9.10 does not know the
 * newer "clock" waits, so a deadline computed from its faked monotonic clock
 * reaches the kernel unconverted and lies decades ahead: CPython waits for
 * every timed lock acquire (Event.wait, Thread.join, queue.get with a timeout)
 * with sem_clockwait, and those calls never return. These wrappers turn the
 * deadline into "this much time from now" on the real clock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The same moment as *abstime* on the process's (faked) clock, on the real one. */
static struct timespec real_deadline(clockid_t clock, const struct timespec *abstime) {
    struct timespec seen, actual, deadline = *abstime;
    if (clock_gettime(clock, &seen) != 0 || syscall(SYS_clock_gettime, clock, &actual) != 0)
        return deadline;
    long long left = (long long)(abstime->tv_sec - seen.tv_sec) * 1000000000LL
                     + (abstime->tv_nsec - seen.tv_nsec);
    if (left < 0) left = 0;
    long long ns = (long long)actual.tv_nsec + left % 1000000000LL;
    deadline.tv_sec = actual.tv_sec + left / 1000000000LL + ns / 1000000000LL;
    deadline.tv_nsec = ns % 1000000000LL;
    return deadline;
}

int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime) {
    static int (*real)(sem_t *, clockid_t, const struct timespec *) = NULL;
    if (real == NULL) real = dlsym(RTLD_NEXT, "sem_clockwait");
    if (real == NULL) { errno = ENOSYS; return -1; }
    struct timespec deadline = real_deadline(clock, abstime);
    return real(sem, clock, &deadline);
}

int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                           const struct timespec *abstime) {
    static int (*real)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                       const struct timespec *) = NULL;
    if (real == NULL) real = dlsym(RTLD_NEXT, "pthread_cond_clockwait");
    if (real == NULL) return ENOSYS;
    struct timespec deadline = real_deadline(clock, abstime);
    return real(cond, mutex, clock, &deadline);
}
