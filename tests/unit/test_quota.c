/* tests/unit/test_quota.c — runtime/quota.c (check, charge, parent budget,
 * tighten, the JSON forms), server/quotas.c (the --quotas file) and the
 * store's atomic add of a tenant's use (server/store.c). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/err.h"
#include "runtime/quota.h"
#include "server/quotas.h"
#include "server/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static void names(void **state)
{
        (void)state;
        for (int k = 0; k < QUOTA_KIND_MAX; k++)
                assert_int_equal(quota_kind_of(quota_name(k)), k);
        assert_int_equal(quota_kind_of("nope"), -1);
        assert_null(quota_name(QUOTA_KIND_MAX));
        assert_string_equal(quota_name(QUOTA_HTTP_REQUESTS), "http_requests");
}

static void check_and_take(void **state)
{
        (void)state;
        struct quota q = { .scope = "session" };
        char msg[512];
        /* No limit: anything goes, and is counted. */
        assert_true(quota_take(&q, QUOTA_EGRESS_BYTES, 1u << 30, msg, sizeof(msg)));
        assert_int_equal(q.used[QUOTA_EGRESS_BYTES], 1u << 30);
        q.lim.v[QUOTA_EFFECTS] = 2;
        assert_true(quota_take(&q, QUOTA_EFFECTS, 1, msg, sizeof(msg)));
        assert_true(quota_take(&q, QUOTA_EFFECTS, 1, msg, sizeof(msg)));
        assert_false(quota_take(&q, QUOTA_EFFECTS, 1, msg, sizeof(msg)));
        assert_int_equal(q.used[QUOTA_EFFECTS], 2);
        assert_non_null(strstr(msg, "session quota exceeded: effects limit 2, used 2"));
        /* n larger than what is left: refused, nothing charged, the need named. */
        q.lim.v[QUOTA_INGRESS_BYTES] = 100;
        assert_true(quota_take(&q, QUOTA_INGRESS_BYTES, 60, msg, sizeof(msg)));
        assert_false(quota_take(&q, QUOTA_INGRESS_BYTES, 41, msg, sizeof(msg)));
        assert_non_null(strstr(msg, "ingress_bytes limit 100, used 60, this call needs 41 more"));
        assert_int_equal(q.used[QUOTA_INGRESS_BYTES], 60);
        assert_true(quota_take(&q, QUOTA_INGRESS_BYTES, 40, msg, sizeof(msg)));
        /* n 0: refused only when used up. */
        assert_false(quota_check(&q, QUOTA_INGRESS_BYTES, 0, msg, sizeof(msg)));
        assert_true(quota_check(&q, QUOTA_LLM_TOKENS, 0, msg, sizeof(msg)));
        /* add: past the limit (an after-the-fact figure), saturating. */
        quota_add(&q, QUOTA_INGRESS_BYTES, 50);
        assert_int_equal(q.used[QUOTA_INGRESS_BYTES], 150);
        quota_add(&q, QUOTA_INGRESS_BYTES, UINT64_MAX);
        assert_true(q.used[QUOTA_INGRESS_BYTES] == UINT64_MAX);
}

static void parent_budget(void **state)
{
        (void)state;
        struct quota tenant = { .scope = "tenant" };
        tenant.lim.v[QUOTA_HTTP_REQUESTS] = 3;
        struct quota a = { .scope = "session", .parent = &tenant }, b = { .scope = "session", .parent = &tenant };
        a.lim.v[QUOTA_HTTP_REQUESTS] = 2;
        char msg[512];
        assert_true(quota_take_call(&a, "http", msg, sizeof(msg)));
        assert_true(quota_take_call(&a, "http", msg, sizeof(msg)));
        assert_false(quota_take_call(&a, "http", msg, sizeof(msg)));
        assert_non_null(strstr(msg, "session quota exceeded: http_requests limit 2"));
        assert_true(quota_take_call(&b, "http", msg, sizeof(msg)));
        /* The tenant's budget is spent: b (no limit of its own) is refused by it. */
        assert_false(quota_take_call(&b, "http", msg, sizeof(msg)));
        assert_non_null(strstr(msg, "tenant quota exceeded: http_requests limit 3, used 3"));
        assert_int_equal(tenant.used[QUOTA_HTTP_REQUESTS], 3);
        assert_int_equal(tenant.used[QUOTA_EFFECTS], 3);
        assert_int_equal(b.used[QUOTA_HTTP_REQUESTS], 1);
        /* All or nothing: a refused call charges no effect either. */
        assert_int_equal(b.used[QUOTA_EFFECTS], 1);
        /* log and call.cancel are not effects; tool counts a tool call. */
        assert_true(quota_take_call(&b, "log", msg, sizeof(msg)));
        assert_true(quota_take_call(&b, "call.cancel", msg, sizeof(msg)));
        assert_int_equal(b.used[QUOTA_EFFECTS], 1);
        assert_true(quota_take_call(&b, "tool", msg, sizeof(msg)));
        assert_int_equal(b.used[QUOTA_TOOL_CALLS], 1);
        assert_int_equal(b.used[QUOTA_EFFECTS], 2);
}

static void parse_and_tighten(void **state)
{
        (void)state;
        char msg[512];
        struct quota_limits l = { 0 };
        cJSON *o = cJSON_Parse("{\"effects\": 10, \"wall_ms\": 5000}");
        assert_true(quota_limits_parse(o, "x", NULL, &l, msg, sizeof(msg)));
        assert_int_equal(l.v[QUOTA_EFFECTS], 10);
        assert_int_equal(l.v[QUOTA_WALL_MS], 5000);
        cJSON_Delete(o);
        static const char *const bad[] = { "{\"effects\": 0}", "{\"effects\": 1.5}", "{\"effects\": \"1\"}",
                                           "{\"effects\": -3}", "{\"effects\": 1e300}", "{\"nope\": 1}", "[1]" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct quota_limits keep = l;
                o = cJSON_Parse(bad[i]);
                assert_false(quota_limits_parse(o, "x", NULL, &l, msg, sizeof(msg)));
                assert_memory_equal(&keep, &l, sizeof(l)); /* untouched on error */
                assert_true(strncmp(msg, "x: ", 3) == 0);
                cJSON_Delete(o);
        }
        o = cJSON_Parse("{\"concurrent_sessions\": 2, \"effects\": 4}");
        assert_true(quota_limits_parse(o, "x", "concurrent_sessions", &l, msg, sizeof(msg)));
        cJSON_Delete(o);
        /* Stricter wins, both ways; 0 (none) never loosens. */
        struct quota_limits op = { 0 }, own = { 0 };
        op.v[QUOTA_EFFECTS] = 10;
        op.v[QUOTA_HTTP_REQUESTS] = 5;
        own.v[QUOTA_EFFECTS] = 3;
        own.v[QUOTA_HTTP_REQUESTS] = 50;
        own.v[QUOTA_TOOL_CALLS] = 7;
        quota_limits_tighten(&op, &own);
        assert_int_equal(op.v[QUOTA_EFFECTS], 3);
        assert_int_equal(op.v[QUOTA_HTTP_REQUESTS], 5);
        assert_int_equal(op.v[QUOTA_TOOL_CALLS], 7);
        assert_int_equal(op.v[QUOTA_LLM_TOKENS], 0);
}

static void usage_json_round_trip(void **state)
{
        (void)state;
        struct quota q = { 0 }, r = { 0 };
        q.lim.v[QUOTA_EFFECTS] = 9;
        q.used[QUOTA_EFFECTS] = 4;
        q.used[QUOTA_WALL_MS] = 1234;
        cJSON *j = quota_usage_json(&q);
        char *text = cJSON_PrintUnformatted(j);
        assert_non_null(strstr(text, "\"effects\":{\"used\":4,\"limit\":9}"));
        assert_non_null(strstr(text, "\"wall_ms\":{\"used\":1234,\"limit\":null}"));
        quota_usage_load(&r, j);
        assert_memory_equal(r.used, q.used, sizeof(q.used));
        quota_usage_load(&r, NULL); /* nothing: unchanged */
        assert_int_equal(r.used[QUOTA_EFFECTS], 4);
        free(text);
        cJSON_Delete(j);
}

static void quotas_file(void **state)
{
        (void)state;
        struct quotas *q = NULL;
        struct err *e = NULL;
        const char *ok = "{\"session\": {\"effects\": 5}, \"tenant\": {\"llm_tokens\": 100, \"concurrent_sessions\": 2},"
                         " \"tenants\": {\"acme\": {\"concurrent_sessions\": 9}}, \"window_s\": 3600}";
        assert_int_equal(quotas_parse(ok, strlen(ok), "f", &q, &e), 0);
        assert_int_equal(q->session.v[QUOTA_EFFECTS], 5);
        assert_int_equal(q->window_s, 3600);
        const struct quotas_tenant *t = quotas_tenant(q, "acme");
        assert_int_equal(t->concurrent, 9);
        assert_int_equal(t->lim.v[QUOTA_LLM_TOKENS], 100); /* "tenant"'s, then its own */
        t = quotas_tenant(q, "other");
        assert_int_equal(t->concurrent, 2);
        quotas_free(q);
        q = NULL;
        assert_int_equal(quotas_parse("{}", 2, "f", &q, &e), 0);
        assert_int_equal(q->window_s, QUOTAS_DEFAULT_WINDOW_S);
        quotas_free(q);
        static const char *const bad[] = {
                "{", "[]", "{\"x\": 1}", "{\"session\": {\"effects\": 0}}", "{\"tenant\": {\"concurrent_sessions\": 0}}",
                "{\"tenants\": []}", "{\"window_s\": 0}", "{\"tenants\": {\"a\": {\"bogus\": 1}}}",
                "{\"session\": {\"concurrent_sessions\": 1}}",
                "{\"session\": {\"effects\": 2}} trailing", /* cJSON's parser took it, without the rest */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                q = NULL;
                assert_int_equal(quotas_parse(bad[i], strlen(bad[i]), "f", &q, &e), -1);
                assert_null(q);
                assert_true(strncmp(err_msg(e), "f", 1) == 0);
                err_free(e);
                e = NULL;
        }
        assert_int_equal(quotas_load_file("/nonexistent/q.json", &q, &e), -1);
        assert_non_null(strstr(err_msg(e), "cannot open /nonexistent/q.json"));
        err_free(e);
}

/* The "used" of quota `name` in a tenant_usage row, -1 when absent. */
static double row_used(const char *text, const char *name)
{
        cJSON *u = cJSON_Parse(text);
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(u, name), "used");
        double v = cJSON_IsNumber(n) ? n->valuedouble : -1;
        cJSON_Delete(u);
        return v;
}

/* Two connections on one state directory add to a tenant's row: neither
 * add is lost, batched or not, and a row written by the old format (used
 * and limit) is added to. */
static void store_usage_add_two_connections(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-test-store-XXXXXX";
        assert_non_null(mkdtemp(dir));
        struct store *a = NULL, *b = NULL;
        struct err *e = NULL;
        assert_int_equal(store_open(dir, &a, &e), 0);
        assert_int_equal(store_open(dir, &b, &e), 0);
        assert_int_equal(store_tenant_usage_put(a, "t", 100, "{\"effects\":{\"used\":5,\"limit\":10}}", &e), 0);
        char *now = NULL;
        assert_int_equal(store_tenant_usage_add(a, "t", 100, "{\"effects\":2,\"egress_bytes\":7}", false, &now, &e), 0);
        assert_true(row_used(now, "effects") == 7 && row_used(now, "egress_bytes") == 7);
        free(now);
        /* b read nothing before: its add is on top of a's, not over it. */
        assert_int_equal(store_tenant_usage_add(b, "t", 100, "{\"effects\":1}", false, &now, &e), 0);
        assert_true(row_used(now, "effects") == 8 && row_used(now, "egress_bytes") == 7);
        free(now);
        /* Batched: visible to the other connection once committed. */
        assert_int_equal(store_tenant_usage_add(a, "t", 100, "{\"effects\":3}", true, NULL, &e), 0);
        assert_int_equal(store_commit(a, &e), 0);
        assert_int_equal(store_tenant_usage_get(b, "t", 100, &now, &e), 0);
        assert_true(row_used(now, "effects") == 11);
        free(now);
        /* Another window, another tenant: rows of their own. */
        assert_int_equal(store_tenant_usage_add(b, "t", 200, "{\"effects\":1}", false, NULL, &e), 0);
        assert_int_equal(store_tenant_usage_add(b, "u", 100, "{\"effects\":1}", false, NULL, &e), 0);
        assert_int_equal(store_tenant_usage_get(a, "t", 100, &now, &e), 0);
        assert_true(row_used(now, "effects") == 11);
        free(now);
        assert_int_equal(store_tenant_usage_add(a, "t", 100, "[1]", false, NULL, &e), -1);
        err_free(e);
        e = NULL;
        store_close(a);
        store_close(b);
        /* Two processes, each with its connection, adding at once: every add counts. */
        enum { ADDS = 150 };
        pid_t kids[2];
        for (int i = 0; i < 2; i++) {
                kids[i] = fork();
                assert_true(kids[i] >= 0);
                if (kids[i] == 0) {
                        struct store *s = NULL;
                        int bad = store_open(dir, &s, NULL) < 0;
                        for (int n = 0; !bad && n < ADDS; n++)
                                bad = store_tenant_usage_add(s, "race", 100, "{\"effects\":1}", false, NULL, NULL) < 0;
                        store_close(s);
                        _exit(bad);
                }
        }
        for (int i = 0; i < 2; i++) {
                int st = 0;
                assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
                assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        assert_int_equal(store_open(dir, &a, &e), 0);
        assert_int_equal(store_tenant_usage_get(a, "race", 100, &now, &e), 0);
        assert_true(row_used(now, "effects") == 2 * ADDS);
        free(now);
        store_close(a);
        /* serve.db and its -wal / -shm */
        DIR *d = opendir(dir);
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.')
                        assert_int_equal(unlinkat(dirfd(d), de->d_name, 0), 0);
        closedir(d);
        assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(names),
                cmocka_unit_test(check_and_take),
                cmocka_unit_test(parent_budget),
                cmocka_unit_test(parse_and_tighten),
                cmocka_unit_test(usage_json_round_trip),
                cmocka_unit_test(quotas_file),
                cmocka_unit_test(store_usage_add_two_connections),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
