/*
 * Preloaded before libfaketime by `make test-dates` (see the Makefile), to
 * work around two faults of Debian's libfaketime 0.9.10 in a multithreaded
 * Python; neither has to do with the dates it fakes.
 *
 * 1. Waits it does not convert. libfaketime shifts every clock, the
 *    monotonic one too, and converts the deadlines of the waits it knows
 *    (sem_timedwait, pthread_cond_timedwait, ...), but not the newer "clock"
 *    waits: a deadline computed from its faked monotonic clock reaches the
 *    kernel unconverted and lies decades ahead. CPython waits for every
 *    timed lock acquire (Event.wait, Thread.join, queue.get with a timeout)
 *    with sem_clockwait, and those calls never returned. The wrappers below
 *    turn such a deadline into the same time from now on the real clock.
 *
 * 2. Environment reads racing writes. Its pthread_cond_timedwait wrapper
 *    calls getenv() on every call, and CPython waits for the GIL with
 *    pthread_cond_timedwait, so threads waiting for the GIL read the
 *    environment while the thread holding it changes it (os.environ[...] =
 *    ... calls setenv): a reader met a half-reallocated environ and the run
 *    died with SIGSEGV (gdb: getenv <- needs_forced_monotonic_fix <-
 *    PyCOND_TIMEDWAIT). Here getenv, setenv, putenv, unsetenv and clearenv
 *    take one lock; fork takes it too, so a child never inherits it held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* -- 1. clock waits -------------------------------------------------------- */

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

/* -- 2. the environment, under one lock ------------------------------------- */

extern char **environ;
static pthread_rwlock_t env_lock = PTHREAD_RWLOCK_INITIALIZER;

static void env_prepare(void) { pthread_rwlock_wrlock(&env_lock); }
static void env_release(void) { pthread_rwlock_unlock(&env_lock); }

__attribute__((constructor)) static void env_fork_safe(void) {
    pthread_atfork(env_prepare, env_release, env_release);
}

/* getenv itself, scanning environ: no lookup of the real one is needed,
 * so it also works in the loader's earliest calls. */
char *getenv(const char *name) {
    size_t length = strlen(name);
    char *found = NULL;
    pthread_rwlock_rdlock(&env_lock);
    for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
        if (strncmp(*entry, name, length) == 0 && (*entry)[length] == '=') {
            found = *entry + length + 1;
            break;
        }
    }
    pthread_rwlock_unlock(&env_lock);
    return found;
}

#define LOCKED_WRITE(type, name, params, args)                 \
    type name params {                                        \
        static type(*real) params = NULL;                     \
        if (real == NULL) real = (type(*) params)dlsym(RTLD_NEXT, #name); \
        if (real == NULL) { errno = ENOSYS; return -1; }      \
        pthread_rwlock_wrlock(&env_lock);                     \
        type result = real args;                              \
        pthread_rwlock_unlock(&env_lock);                     \
        return result;                                        \
    }

LOCKED_WRITE(int, setenv, (const char *name, const char *value, int overwrite),
             (name, value, overwrite))
LOCKED_WRITE(int, putenv, (char *string), (string))
LOCKED_WRITE(int, unsetenv, (const char *name), (name))
LOCKED_WRITE(int, clearenv, (void), ())
