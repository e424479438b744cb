/* engine/engine-internal.h — state shared by the engine's source files.
 * Nothing outside engine/ includes this. */
#ifndef CHIDORI_ENGINE_INTERNAL_H
#define CHIDORI_ENGINE_INTERNAL_H

#include <JavaScriptCore/JavaScript.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/err.h"
#include "proto/proto.h"

/* JSContextGroupSetExecutionTimeLimit and JSContextGroupClearExecutionTimeLimit
 * are exported by libjavascriptcoregtk-4.1, but their header
 * (JSContextRefPrivate.h) is not installed by libjavascriptcoregtk-4.1-dev, so
 * they are declared here with the signatures from that header.  The limit is
 * in seconds of CPU time of the thread running JS, counted from each VM entry;
 * the callback returning true ends execution with an exception that JS
 * try/catch cannot catch. */
typedef bool (*JSShouldTerminateCallback)(JSContextRef ctx, void *context);
void JSContextGroupSetExecutionTimeLimit(JSContextGroupRef group, double limit,
                                         JSShouldTerminateCallback callback, void *context);
void JSContextGroupClearExecutionTimeLimit(JSContextGroupRef group);

/* The watchdog's slice: the most CPU time JS runs between two looks at the
 * stop flag and the budget (engine/natives.c). */
#define WATCHDOG_SLICE_NS (50u * 1000000u)

/* Embedded by engine/embed.S; each is followed by a NUL byte. */
extern const char chidori_web_js[], chidori_web_js_end[];
extern const char chidori_prelude_js[], chidori_prelude_js_end[];
/* The modules the prelude loads on first use (native load(name)). */
extern const char chidori_fetch_js[], chidori_crypto_js[], chidori_fs_js[], chidori_process_js[],
        chidori_format_js[];
/* The parts of the Node/Web surface (build/gen/node-parts.S), loaded as
 * "node.PART"; ends with {NULL, NULL}. */
struct engine_node_part {
        const char *name, *src;
};
extern const struct engine_node_part chidori_node_parts[];

/* Why the run loop stopped.  The first reason recorded wins. */
enum engine_end {
        ENGINE_RUNNING = 0,
        ENGINE_SETTLED,        /* the prelude handed a done frame to finish() */
        ENGINE_CPU_LIMIT,      /* the CPU budget ran out */
        ENGINE_STOPPED,        /* the in-process parent asked us to stop (*stop) */
        ENGINE_NEVER_SETTLED,  /* nothing left to do, agent promise pending */
        ENGINE_PROTOCOL,       /* the parent sent something wrong (protocol_msg) */
        ENGINE_TRANSPORT,      /* read/write failed (transport_err) */
};

enum native_kind {
        NATIVE_CALL,       /* call(op, argsJson) -> id; result comes through the loop */
        NATIVE_CALL_SYNC,  /* callSync(op, argsJson) -> the result frame object */
        NATIVE_FINISH,     /* finish(doneFrameJson): the agent settled */
        NATIVE_LOAD,       /* load(name): evaluate an embedded module, return its completion value */
        NATIVE_MAX
};

struct engine;

/* Private data of the native function objects. */
struct engine_native {
        struct engine *e;
        enum native_kind kind;
};

/* A result frame that arrived while a synchronous call was waiting; it is
 * delivered by the loop in arrival order.  frame is JSValueProtect'ed. */
struct engine_result {
        uint64_t id;
        JSValueRef frame;
};

/* Per-call state, indexed by call id. */
enum {
        CALL_UNUSED = 0,
        CALL_OUTSTANDING,
        CALL_ANSWERED,
};

struct engine {
        int in_fd;
        struct frame_reader reader; /* buffered: a small frame is one read(2) */
        int out_fd;

        JSContextGroupRef group;
        JSGlobalContextRef ctx;
        JSClassRef native_class;
        struct engine_native natives[NATIVE_MAX];
        /* Hooks returned by the prelude (JSValueProtect'ed). */
        JSObjectRef hook_start;
        JSObjectRef hook_deliver;
        JSObjectRef hook_fire_timer;
        JSObjectRef hook_fail;
        JSStringRef str_type, str_id, str_ok;

        /* Host calls. */
        uint64_t last_id;      /* ids are 1, 2, 3, ... in program order */
        uint8_t *call_state;   /* CALL_* by id */
        size_t call_state_cap;
        size_t outstanding;
        struct engine_result *queue;
        size_t queue_head, queue_len, queue_cap;
        uint8_t timers_queued; /* the prelude's timer heap is not empty (natives.c) */
        char *out_buf;         /* call frame being composed */
        size_t out_cap;

        /* The watchdog: CPU budget (CLOCK_THREAD_CPUTIME_ID of the engine
         * thread) and the stop flag of an in-process parent. */
        uint64_t cpu_budget_ns;  /* 0: no limit */
        uint64_t cpu_start_ns;
        uint64_t cpu_seen_ns;      /* CPU used at the last reading of the clock */
        uint64_t cpu_seen_mono_ns; /* CLOCK_MONOTONIC_RAW then; 0: never read */
        uint64_t deadline_ms;
        uint64_t armed_ns;       /* limit installed on the group, 0 = none/unknown */
        const _Atomic int *stop; /* non-zero: stop (set by another thread), or NULL */
        bool terminated;         /* the watchdog callback decided to terminate */

        /* Frames out, and the backstop (backstop.c). */
        pthread_mutex_t out_lock;   /* one writer at a time on out_fd */
        bool done_sent;             /* under out_lock: the done frame is out */
        pthread_t backstop;
        bool backstop_running;
        bool backstop_quit;         /* under out_lock */
        pthread_cond_t backstop_wake;
        clockid_t engine_clock;     /* the engine thread's CPU clock */
        char *backstop_done;        /* the cpu_limit done frame it writes */

        /* Outcome. */
        enum engine_end end;
        char *done_text;       /* ENGINE_SETTLED: the done frame, from JS */
        char *protocol_msg;    /* ENGINE_PROTOCOL */
        struct err *transport_err;
};

/* lockdown.c: the CPU budget the SIGABRT handler checks (a JSC abort past
 * the budget is reported as the budget's ending). */
void engine_abort_budget(clockid_t engine_clock, uint64_t start_ns, uint64_t budget_ns);

/* transport.c */
int engine_send_call(struct engine *e, const char *op, JSStringRef args, uint64_t *ret_id,
                     JSValueRef *exception);
int engine_read_result(struct engine *e, uint64_t *ret_id, JSValueRef *ret_frame);
int engine_queue_push(struct engine *e, uint64_t id, JSValueRef frame);
bool engine_queue_pop(struct engine *e, uint64_t *ret_id, JSValueRef *ret_frame);
void engine_queue_clear(struct engine *e);
int engine_write_frame(struct engine *e, const char *body, size_t len);
int engine_write_frame_draining(struct engine *e, const char *body, size_t len, struct err **err);
JSValueRef engine_read_json_frame(struct engine *e, const char *expect_type);
void engine_fail_protocol(struct engine *e, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
void engine_fail_transport(struct engine *e, struct err *err);
char *engine_js_to_utf8(JSStringRef s, size_t *ret_len);
char *engine_value_to_utf8(JSContextRef ctx, JSValueRef v, size_t *ret_len);

/* backstop.c */
int engine_backstop_start(struct engine *e);
void engine_backstop_stop(struct engine *e);
/* Write one frame under the output lock; is_done marks the run's last.
 * Fails (EPIPE) once a done frame is out. */
int engine_frame_out(struct engine *e, const char *body, size_t len, bool is_done, struct err **err);

/* engine.c */
char *engine_failure_done(const char *kind, const char *name, const char *message);

/* natives.c */
JSObjectRef engine_make_natives(struct engine *e);
void engine_set_cpu_budget(struct engine *e, uint64_t deadline_ms);
JSValueRef engine_enter(struct engine *e, JSObjectRef fn, size_t argc, const JSValueRef argv[],
                        JSValueRef *exception);
bool engine_arm(struct engine *e);
void engine_request_abort(struct engine *e);
JSValueRef engine_make_error(JSContextRef ctx, const char *name, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* compile.c: esm selects the wrapper of an ES-module bundle (strict, async:
 * the wrapper returns a promise, top-level await works). */
JSObjectRef engine_compile(struct engine *e, JSStringRef script, JSStringRef filename, bool esm,
                           unsigned *ret_prefix_len, JSValueRef *ret_exception);

#endif
