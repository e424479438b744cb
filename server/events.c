/* server/events.c — what a session says, as events (docs/serve.md,
 * "Events"): each is recorded in the store with a per-session sequence
 * number, then written to the session's open SSE streams.
 *
 * A stream is an MHD response of unknown length read through a callback:
 * it holds the text not yet sent; when it has none and the session has not
 * settled, the connection is suspended (no busy loop) and resumed when an
 * event comes, at the 15 s keep-alive comment, or when the session settles
 * (then the stream ends once its text is sent).  A client that goes away is
 * found at the next write; the session is not touched by it. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include "server/mhd.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runtime/evloop.h"
#include "server/server-internal.h"
#include "server/store.h"

#define KEEPALIVE_MS 15000.0
/* Text a stream may hold for a slow reader before it is cut off. */
#define STREAM_MAX_BUFFER (8u << 20)

struct stream {
        struct stream *next;
        struct server *srv;
        struct MHD_Connection *conn;
        char id[SESSION_ID_LEN + 1];
        char *buf;
        size_t len, off, cap;
        bool ended;       /* the session settled: end once buf is sent */
        bool broken;      /* too much unsent text: close */
        bool suspended;
        uint64_t last;    /* the last event's seq written to it */
        struct ev_timer *keepalive;
};

static void stream_append(struct stream *st, const char *text, size_t n)
{
        if (st->broken)
                return;
        if (st->off == st->len)
                st->off = st->len = 0;
        if (st->len + n > STREAM_MAX_BUFFER) {
                st->broken = true;
                return;
        }
        if (st->len + n > st->cap) {
                size_t cap = st->cap ? st->cap : 4096;
                while (cap < st->len + n)
                        cap *= 2;
                char *nb = realloc(st->buf, cap);
                if (!nb) {
                        st->broken = true;
                        return;
                }
                st->buf = nb;
                st->cap = cap;
        }
        memcpy(st->buf + st->len, text, n);
        st->len += n;
}

static void stream_event(struct stream *st, uint64_t seq, const char *event, const char *data)
{
        char head[96];
        int n = snprintf(head, sizeof(head), "id: %llu\nevent: %s\ndata: ", (unsigned long long)seq, event);
        if (seq > st->last)
                st->last = seq;
        stream_append(st, head, (size_t)n);
        stream_append(st, data, strlen(data));
        stream_append(st, "\n\n", 2);
}

static void stream_wake(struct stream *st)
{
        if (!st->suspended)
                return;
        st->suspended = false;
        MHD_resume_connection(st->conn);
        http_kick(st->srv);
}

static void on_keepalive(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)t;
        struct stream *st = arg;
        st->keepalive = NULL;
        stream_append(st, ": keep-alive\n\n", 14);
        stream_wake(st);
        evloop_timer_add(loop, mono_ms() + KEEPALIVE_MS, on_keepalive, st, &st->keepalive, NULL);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
        (void)pos;
        struct stream *st = cls;
        if (st->broken)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        if (st->off < st->len) {
                size_t n = st->len - st->off;
                if (n > max)
                        n = max;
                memcpy(out, st->buf + st->off, n);
                st->off += n;
                return (ssize_t)n;
        }
        if (st->ended)
                return MHD_CONTENT_READER_END_OF_STREAM;
        /* Nothing to send: wait for the next event without spinning. */
        st->suspended = true;
        MHD_suspend_connection(st->conn);
        return 0;
}

/* MHD is done with the answer (sent, or the client went away). */
static void stream_free(void *cls)
{
        struct stream *st = cls;
        for (struct stream **p = &st->srv->streams; *p; p = &(*p)->next)
                if (*p == st) {
                        *p = st->next;
                        break;
                }
        if (st->keepalive)
                evloop_timer_del(st->srv->loop, st->keepalive);
        free(st->buf);
        free(st);
}

void events_emit(struct server *srv, const char *id, const char *event, cJSON *data, bool batch)
{
        char *text = data ? cJSON_PrintUnformatted(data) : NULL;
        cJSON_Delete(data);
        if (!text)
                return;
        uint64_t seq = 0;
        struct err *err = NULL;
        if (store_event_append(srv->store, id, event, text, batch, &seq, &err) < 0) {
                fprintf(stderr, "chidori: serve: session %s: event not recorded: %s\n", id, err_msg(err));
                err_free(err);
                free(text);
                return;
        }
        for (struct stream *st = srv->streams; st; st = st->next)
                if (strcmp(st->id, id) == 0 && !st->ended) {
                        stream_event(st, seq, event, text);
                        stream_wake(st);
                }
        free(text);
}

void events_settled(struct server *srv, const char *id)
{
        for (struct stream *st = srv->streams; st; st = st->next)
                if (strcmp(st->id, id) == 0) {
                        st->ended = true;
                        stream_wake(st);
                }
}

static int past_event(void *arg, uint64_t seq, const char *event, const char *data)
{
        stream_event(arg, seq, event, data);
        return 0;
}

void events_stream(struct server *srv, struct http_req *r, const char *id, uint64_t after, unsigned status)
{
        struct stream *st = calloc(1, sizeof(*st));
        if (!st) {
                api_error(r, API_INTERNAL, "out of memory");
                return;
        }
        st->srv = srv;
        st->conn = r->conn;
        snprintf(st->id, sizeof(st->id), "%s", id);
        struct err *err = NULL;
        if (store_events_each(srv->store, id, after, past_event, st, &err) < 0) {
                api_error(r, API_INTERNAL, "the state database failed: %s", err_msg(err));
                err_free(err);
                free(st->buf);
                free(st);
                return;
        }
        /* Settled already (or, with one server, not this server's to run):
         * what is recorded is all.  With replicas (leases), a session another
         * replica runs is streamed from the store (events_poll). */
        struct store_session s = { 0 };
        if (store_session_get(srv->store, id, &s, NULL) != 0 ||
            (strcmp(s.status, "queued") != 0 && strcmp(s.status, "running") != 0) ||
            (!sessions_find(srv, id) && !store_leases(srv->store)))
                st->ended = true;
        store_session_clear(&s);
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st,
                                                                      stream_free);
        if (!resp) {
                free(st->buf);
                free(st);
                api_error(r, API_INTERNAL, "out of memory");
                return;
        }
        char loc[64];
        snprintf(loc, sizeof(loc), "/sessions/%s", id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        if (status == 201)
                MHD_add_response_header(resp, "Location", loc);
        st->next = srv->streams;
        srv->streams = st;
        enum MHD_Result ok = MHD_queue_response(r->conn, status, resp);
        MHD_destroy_response(resp); /* stream_free runs when MHD is done with it */
        if (ok != MHD_YES)
                return;
        r->answered = true;
        srv->stats.requests++;
        srv->stats.by_class[status / 100]++;
        if (!st->ended)
                evloop_timer_add(srv->loop, mono_ms() + KEEPALIVE_MS, on_keepalive, st, &st->keepalive, NULL);
}

void events_poll(struct server *srv)
{
        for (struct stream *st = srv->streams; st; st = st->next) {
                if (st->ended || st->broken || sessions_find(srv, st->id))
                        continue;
                size_t before = st->len;
                if (store_events_each(srv->store, st->id, st->last, past_event, st, NULL) < 0)
                        continue;
                struct store_session s = { 0 };
                int rc = store_session_get(srv->store, st->id, &s, NULL);
                if (rc > 0 || (rc == 0 && strcmp(s.status, "queued") != 0 && strcmp(s.status, "running") != 0)) {
                        /* What it recorded up to its end (read after the status). */
                        store_events_each(srv->store, st->id, st->last, past_event, st, NULL);
                        st->ended = true;
                }
                store_session_clear(&s);
                if (st->len != before || st->ended)
                        stream_wake(st);
        }
}

void events_free_all(struct server *srv)
{
        for (struct stream *st = srv->streams; st; st = st->next) {
                st->ended = true;
                if (st->keepalive)
                        evloop_timer_del(srv->loop, st->keepalive);
                st->keepalive = NULL;
                stream_wake(st);
        }
}
