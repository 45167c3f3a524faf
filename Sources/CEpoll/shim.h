#ifndef PEERNODE_CEPOLL_SHIM_H
#define PEERNODE_CEPOLL_SHIM_H
/* epoll and eventfd are not in Swift's Glibc module; this makes them callable. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <signal.h>
#include <pthread.h>
#include <errno.h>
#include <unistd.h>

/* Declared by <sys/socket.h> only under _GNU_SOURCE, which a module build may not see. */
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);

/* Declared by <fcntl.h> only under _GNU_SOURCE, as above. */
extern int sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags);

/* Starts writing a file's dirty pages in [offset, offset + length) to the
   disk and returns without waiting for them (SYNC_FILE_RANGE_WRITE, 2):
   an fsync that follows then has little left to wait for. 0, or -1 and errno. */
static inline int peernode_write_behind(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, offset, length, 2);
}

static const uint32_t peernode_EPOLLIN = EPOLLIN;
static const uint32_t peernode_EPOLLOUT = EPOLLOUT;
static const uint32_t peernode_EPOLLERR = EPOLLERR;
static const uint32_t peernode_EPOLLHUP = EPOLLHUP;
static const uint32_t peernode_EPOLLRDHUP = EPOLLRDHUP;

static inline int peernode_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &ev);
}

static inline uint64_t peernode_epoll_token(const struct epoll_event *ev) { return ev->data.u64; }

/* epoll_wait with a timeout in nanoseconds (negative: none), through
   epoll_pwait2 (Linux 5.11); where it fails for any reason but a signal
   (ENOSYS on an older kernel, EPERM under a container's seccomp filter
   that does not know it), epoll_wait from then on, with the timeout
   rounded up to whole milliseconds. */
static inline int peernode_epoll_wait_ns(int epfd, struct epoll_event *events, int max, int64_t nanoseconds) {
    static int missing = 0;
    if (!missing) {
        struct timespec t = { nanoseconds / 1000000000, nanoseconds % 1000000000 };
        int n = epoll_pwait2(epfd, events, max, nanoseconds < 0 ? NULL : &t, NULL);
        if (n >= 0 || errno == EINTR) return n;
        missing = 1;
    }
    int milliseconds = nanoseconds < 0 ? -1 : (int)((nanoseconds + 999999) / 1000000);
    return epoll_wait(epfd, events, max, milliseconds);
}
static inline int peernode_accept4(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/* Fills a buffer from the kernel's CSPRNG in one call (WebSocket masking keys). */
static inline long peernode_getrandom(void *buffer, size_t length) {
    return getrandom(buffer, length, 0);
}

static inline uint32_t peernode_epoll_events(const struct epoll_event *ev) { return ev->events; }
/* Blocks `count` signals in the calling thread (threads it starts later
   inherit the mask); 0 or an errno. */
static inline int peernode_block_signals(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* A non-blocking signalfd for `count` signals (they must be blocked); -1 and errno on failure. */
static inline int peernode_signalfd(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* A timer file descriptor on CLOCK_MONOTONIC (non-blocking): readable when it fires. */
static inline int peernode_timerfd(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

/* Arms `fd` to fire once at `seconds` on CLOCK_MONOTONIC (a time already
   past fires at once). 0, or -1 and errno. */
static inline int peernode_timerfd_at(int fd, double seconds) {
    struct itimerspec its = {0};
    if (seconds < 0) seconds = 0;
    its.it_value.tv_sec = (time_t)seconds;
    its.it_value.tv_nsec = (long)((seconds - (double)its.it_value.tv_sec) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* The next signal waiting on a signalfd: its number, 0 when none waits, -1 and errno on failure. */
static inline int peernode_read_signal(int fd) {
    struct signalfd_siginfo info;
    for (;;) {
        ssize_t n = read(fd, &info, sizeof info);
        if (n == (ssize_t)sizeof info) return (int)info.ssi_signo;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        return -1;
    }
}
#endif
