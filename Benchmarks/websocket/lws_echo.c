/*
 * Minimal libwebsockets echo server for the benchmarks (built by
 * scripts/bench-websocket.sh against Debian's libwebsockets-dev).
 * 64 KiB receive and service buffers, as a fair comparison asks.
 * usage: lws_echo PORT
 */
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct msg {
    struct msg *next;
    size_t len;
    int binary;
    unsigned char data[]; /* LWS_PRE bytes of headroom, then the payload */
};

struct session {
    struct msg *head, *tail;
    unsigned char *acc; /* the message being assembled, after LWS_PRE headroom */
    size_t acc_len, acc_cap;
};

static int echo(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct session *s = user;
    switch (reason) {
    case LWS_CALLBACK_ESTABLISHED:
        memset(s, 0, sizeof *s);
        break;
    case LWS_CALLBACK_RECEIVE:
        if (lws_is_first_fragment(wsi)) s->acc_len = 0;
        if (LWS_PRE + s->acc_len + len > s->acc_cap) {
            s->acc_cap = (LWS_PRE + s->acc_len + len) * 2;
            s->acc = realloc(s->acc, s->acc_cap);
        }
        memcpy(s->acc + LWS_PRE + s->acc_len, in, len);
        s->acc_len += len;
        if (lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0) {
            struct msg *m = malloc(sizeof *m + LWS_PRE + s->acc_len);
            m->next = NULL;
            m->len = s->acc_len;
            m->binary = lws_frame_is_binary(wsi);
            memcpy(m->data + LWS_PRE, s->acc + LWS_PRE, s->acc_len);
            if (s->tail) s->tail->next = m; else s->head = m;
            s->tail = m;
            lws_callback_on_writable(wsi);
        }
        break;
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        struct msg *m = s->head;
        if (!m) break;
        int n = lws_write(wsi, m->data + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
        if (n < (int)m->len) return -1;
        s->head = m->next;
        if (!s->head) s->tail = NULL;
        free(m);
        if (s->head) lws_callback_on_writable(wsi);
        break;
    }
    case LWS_CALLBACK_CLOSED:
        while (s->head) { struct msg *m = s->head; s->head = m->next; free(m); }
        free(s->acc);
        break;
    default:
        break;
    }
    return 0;
}

static struct lws_protocols protocols[] = {
    {"echo", echo, sizeof(struct session), 65536, 0, NULL, 65536},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

int main(int argc, char **argv) {
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = argc > 1 ? atoi(argv[1]) : 7681;
    info.iface = "127.0.0.1";
    info.protocols = protocols;
    info.pt_serv_buf_size = 65536;
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context *context = lws_create_context(&info);
    if (!context) return 1;
    printf("PORT %d\n", info.port);
    fflush(stdout);
    while (lws_service(context, 0) >= 0) {}
    lws_context_destroy(context);
    return 0;
}
