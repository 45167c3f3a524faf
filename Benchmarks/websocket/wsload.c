/*
 * wsload: a lean WebSocket load generator for the echo benchmarks.
 * One thread, epoll, no allocation per message. Each connection keeps
 * INFLIGHT binary messages of SIZE bytes in flight against an echo server
 * and counts echoes for SECONDS (after a short warm-up). With INFLIGHT 1 it
 * also records every round trip and prints p50/p99.
 *
 * usage: wsload HOST PORT CONNECTIONS INFLIGHT SIZE SECONDS
 * prints: messages_per_second=N p50_us=N p99_us=N
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;
    /* receive parser */
    unsigned char head[14];
    int head_len;
    uint64_t remaining; /* payload bytes still to skip */
    int in_payload;
    /* send side */
    long to_send;       /* whole frames still to write */
    size_t partial;     /* bytes of the current frame already written */
    double sent_at;     /* latency mode: time the in-flight message left */
} conn_t;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static unsigned char *frame;
static size_t frame_len;
static unsigned char *batch; /* many small frames back to back */
static size_t batch_frames;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int handshake(int fd, const char *host, int port) {
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET / HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                     host, port);
    if (write(fd, req, n) != n) return -1;
    char buf[4096];
    int got = 0;
    while (got < (int)sizeof buf - 1) {
        int r = read(fd, buf + got, 1);
        if (r <= 0) return -1;
        got += r;
        if (got >= 4 && memcmp(buf + got - 4, "\r\n\r\n", 4) == 0) break;
    }
    buf[got] = 0;
    return strncmp(buf, "HTTP/1.1 101", 12) == 0 ? 0 : -1;
}

static void pump_writes(conn_t *c) {
    while (c->to_send > 0) {
        ssize_t w;
        if (c->partial == 0 && c->to_send >= (long)batch_frames && batch_frames > 1) {
            w = write(c->fd, batch, batch_frames * frame_len);
            if (w < 0) return;
            long whole = w / frame_len;
            c->to_send -= whole;
            c->partial = w % frame_len;
            continue;
        }
        w = write(c->fd, frame + c->partial, frame_len - c->partial);
        if (w < 0) return;
        c->partial += w;
        if (c->partial == frame_len) { c->partial = 0; c->to_send--; }
    }
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: wsload HOST PORT CONNECTIONS INFLIGHT SIZE SECONDS\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]), nconn = atoi(argv[3]), inflight = atoi(argv[4]);
    size_t size = strtoul(argv[5], 0, 10);
    double seconds = atof(argv[6]);
    int latency = (nconn == 1 && inflight == 1);

    /* One masked binary frame; the mask is fixed (the server unmasks, that is all). */
    frame = malloc(size + 14);
    size_t h = 0;
    frame[h++] = 0x82;
    if (size <= 125) frame[h++] = 0x80 | size;
    else if (size <= 0xFFFF) { frame[h++] = 0x80 | 126; frame[h++] = size >> 8; frame[h++] = size & 0xFF; }
    else { frame[h++] = 0x80 | 127; for (int s = 56; s >= 0; s -= 8) frame[h++] = (uint64_t)size >> s; }
    unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
    memcpy(frame + h, key, 4); h += 4;
    for (size_t i = 0; i < size; i++) frame[h + i] = ((unsigned char)(i * 7)) ^ key[i & 3];
    frame_len = h + size;
    batch_frames = frame_len <= 4096 ? (size_t)(65536 / frame_len) : 1;
    if (batch_frames > (size_t)inflight) batch_frames = inflight;
    if (batch_frames < 1) batch_frames = 1;
    batch = malloc(batch_frames * frame_len);
    for (size_t i = 0; i < batch_frames; i++) memcpy(batch + i * frame_len, frame, frame_len);

    int ep = epoll_create1(0);
    conn_t *conns = calloc(nconn, sizeof(conn_t));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, host, &addr.sin_addr);
    for (int i = 0; i < nconn; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || handshake(fd, host, port) != 0) {
            fprintf(stderr, "wsload: connection %d failed\n", i);
            return 1;
        }
        int fl = 1;
        ioctl(fd, FIONBIO, &fl);
        conns[i].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }

    size_t max_samples = latency ? 10000000 : 1;
    double *samples = malloc(max_samples * sizeof(double));
    size_t nsamples = 0;
    unsigned char *buf = malloc(1 << 18);
    struct epoll_event events[256];
    double start = now(), warm = start + 0.5, end = warm + seconds;
    long counted = 0;
    for (int i = 0; i < nconn; i++) {
        conns[i].to_send = inflight;
        conns[i].sent_at = now();
        pump_writes(&conns[i]);
    }
    for (;;) {
        double t = now();
        if (t >= end) break;
        int n = epoll_wait(ep, events, 256, 100);
        for (int e = 0; e < n; e++) {
            conn_t *c = &conns[events[e].data.u32];
            if (events[e].events & EPOLLIN) {
                for (;;) {
                    ssize_t r = read(c->fd, buf, 1 << 18);
                    if (r <= 0) break;
                    ssize_t p = 0;
                    while (p < r) {
                        if (c->in_payload) {
                            uint64_t take = (uint64_t)(r - p) < c->remaining ? (uint64_t)(r - p) : c->remaining;
                            c->remaining -= take;
                            p += take;
                        } else {
                            c->head[c->head_len++] = buf[p++];
                            if (c->head_len < 2) continue;
                            int need = 2, len7 = c->head[1] & 0x7F;
                            if (len7 == 126) need = 4; else if (len7 == 127) need = 10;
                            if (c->head_len < need) continue;
                            uint64_t len = len7;
                            if (len7 == 126) len = (c->head[2] << 8) | c->head[3];
                            else if (len7 == 127) { len = 0; for (int k = 2; k < 10; k++) len = (len << 8) | c->head[k]; }
                            c->remaining = len;
                            c->in_payload = 1;
                            c->head_len = 0;
                        }
                        if (c->in_payload && c->remaining == 0) {
                            c->in_payload = 0;
                            double done = now();
                            if (done >= warm) {
                                counted++;
                                if (latency && nsamples < max_samples) samples[nsamples++] = done - c->sent_at;
                            }
                            c->sent_at = done;
                            c->to_send++;
                        }
                    }
                }
            }
            pump_writes(c);
        }
    }
    double rate = counted / seconds;
    double p50 = 0, p99 = 0;
    if (latency && nsamples > 0) {
        qsort(samples, nsamples, sizeof(double), cmp_double);
        p50 = samples[nsamples / 2] * 1e6;
        p99 = samples[(size_t)(nsamples * 0.99)] * 1e6;
    }
    printf("messages_per_second=%.0f p50_us=%.1f p99_us=%.1f\n", rate, p50, p99);
    return 0;
}
