/* tests/fuzz/fuzz_policy.c — libFuzzer target for the policy parser and the
 * matcher (policy/policy.c).  The bytes are parsed as a policy (directly and
 * through policy_select's inline source); when they split at "\n--\n" the
 * second half is the call's args, otherwise every object inside the input is
 * tried as args, so patterns meet argument trees of the same shape.  Crashes
 * on a broken invariant, not only on memory errors. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static const char *const targets[] = {
        "http", "workspace:list", "workspace:read", "workspace:write", "workspace:delete",
        "workspace:manifest", "tool:a", "tool:search", "app_data:get", "*", "", "tool:",
};

static const char *const canned_args[] = {
        "{}",
        "{\"url\":\"https://api.example.com/v1\"}",
        "{\"url\":\"https://evil.example/?x=https://api.example.com/\"}",
        "{\"url\":\"a\",\"url\":\"b\",\"method\":\"GET\"}",
        "{\"a\":{\"b\":[1,\"x\",null,true,{\"c\":{}}]},\"n\":3}",
};

static struct policy *untrusted;

static void check_one(const struct policy *p, const char *target, const cJSON *args)
{
        struct policy_verdict v, lv;
        enum policy_decision d = policy_check(p, target, args, &v);
        if (d != v.decision || (unsigned)d >= POLICY_DECISION_MAX || v.policy != p)
                abort();
        if (v.rule_index < POLICY_RULE_FALLBACK || (v.rule_index >= 0 && (size_t)v.rule_index >= policy_rule_count(p)))
                abort();
        if (v.rule_index == POLICY_RULE_FALLBACK && d != policy_fallback(p))
                abort();
        /* layering never relaxes either side */
        enum policy_decision l = policy_check_layered(p, untrusted, target, args, &lv);
        struct policy_verdict uv;
        if (l < d || l < policy_check(untrusted, target, args, &uv))
                abort();
        char buf[256];
        size_t n = policy_denial_message(target, &v, buf, sizeof(buf));
        if (strlen(buf) != (n < sizeof(buf) ? n : sizeof(buf) - 1))
                abort();
        policy_ask_message(target, &lv, buf, sizeof(buf));
}

static void check_all(const struct policy *p, const cJSON *args)
{
        for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
                check_one(p, targets[i], args);
}

/* Every object in the tree, up to a bound, as args. */
static void check_objects(const struct policy *p, const cJSON *j, int *budget)
{
        if (!j || *budget <= 0)
                return;
        if (cJSON_IsObject(j)) {
                (*budget)--;
                check_all(p, j);
        }
        for (const cJSON *c = j->child; c; c = c->next)
                check_objects(p, c, budget);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!untrusted && policy_profile("untrusted", NULL, &untrusted, NULL) < 0)
                abort();
        const char *text = (const char *)data;
        size_t plen = size;
        const uint8_t *sep = size >= 4 ? memmem(data, size, "\n--\n", 4) : NULL;
        if (sep)
                plen = (size_t)(sep - data);

        struct policy *p = NULL;
        struct err *e = NULL;
        if (policy_parse(text, plen, "fuzz", &p, &e) < 0) {
                int c = err_code(e);
                if (c < POLICY_ERR_SYNTAX || c > POLICY_ERR_LIMIT || !err_msg(e)[0])
                        abort();
                err_free(e);
        } else {
                char buf[128];
                size_t n = policy_describe(p, buf, sizeof(buf));
                if (strlen(buf) != (n < sizeof(buf) ? n : sizeof(buf) - 1))
                        abort();
                check_all(p, NULL);
                for (size_t i = 0; i < sizeof(canned_args) / sizeof(canned_args[0]); i++) {
                        cJSON *a = cJSON_Parse(canned_args[i]);
                        check_all(p, a);
                        cJSON_Delete(a);
                }
                cJSON *args = sep ? cJSON_ParseWithLength((const char *)sep + 4, size - plen - 4)
                                  : cJSON_ParseWithLength(text, plen);
                int budget = 64;
                check_objects(p, args, &budget);
                if (args && !cJSON_IsObject(args))
                        check_all(p, args);  /* non-object args must not confuse the matcher */
                cJSON_Delete(args);
                policy_free(p);
        }

        /* the same bytes through the selection path, as CHIDORI_POLICY */
        if (plen <= 4096) {
                char *inl = malloc(plen + 1);
                if (!inl)
                        return 0;
                memcpy(inl, text, plen);
                inl[plen] = '\0';
                struct policy_sources src = { .surface = POLICY_SURFACE_SERVE, .env_inline = inl,
                                              .env_profile = inl };
                char *warning = NULL;
                if (policy_select(&src, &p, &warning, &e) < 0)
                        abort();
                /* fail closed: a warning means untrusted, and untrusted never allows http */
                struct policy_verdict v;
                if (warning && (!policy_is_fail_closed(p) || policy_check(p, "http", NULL, &v) != POLICY_DENY))
                        abort();
                char buf[64];
                policy_describe(p, buf, sizeof(buf));
                free(warning);
                policy_free(p);
                free(inl);
        }
        return 0;
}
