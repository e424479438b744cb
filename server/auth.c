/* server/auth.c — bearer tokens and tenants of `chidori serve`.
 *
 * The token file is the operator's (read once at start, bounded); the
 * Authorization header is the caller's: it is compared against every
 * configured token in constant time, whatever matches, so the time of an
 * answer says nothing about which token (or which prefix) was close. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "policy/policy.h"
#include "server/server.h"
#include "server/store.h"

struct auth_entry {
        char *tenant;
        char *token;
        size_t token_len;
};

struct auth {
        struct auth_entry *e;
        size_t n;
};

bool auth_equal(const char *a, size_t alen, const char *b, size_t blen)
{
        /* Walk b's length whatever a is; a length mismatch fails at the end. */
        unsigned char diff = alen != blen;
        for (size_t i = 0; i < blen; i++)
                diff |= (unsigned char)(a[i < alen ? i : 0] ^ b[i]) | (unsigned char)(i >= alen);
        return alen > 0 && diff == 0;
}

int auth_new_open(struct auth **ret, struct err **err)
{
        struct auth *a = calloc(1, sizeof(*a));
        if (!a)
                return err_set(err, ENOMEM, "tokens");
        *ret = a;
        return 0;
}

static bool token_char_ok(unsigned char c)
{
        return c > 0x20 && c < 0x7f;
}

static bool name_ok(const char *s, size_t len, size_t max)
{
        if (len == 0 || len > max)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!token_char_ok((unsigned char)s[i]))
                        return false;
        return true;
}

static int add(struct auth *a, const char *tenant, size_t tlen, const char *token, size_t klen, struct err **err)
{
        if (a->n >= AUTH_MAX_TOKENS)
                return err_set(err, 0, "more than %d tokens", AUTH_MAX_TOKENS);
        for (size_t i = 0; i < a->n; i++)
                if (a->e[i].token_len == klen && memcmp(a->e[i].token, token, klen) == 0)
                        return err_set(err, 0, "the same token is given twice (tenants '%s' and '%.*s'): each "
                                               "tenant needs its own token",
                                       a->e[i].tenant, (int)tlen, tenant);
        struct auth_entry *ne = realloc(a->e, (a->n + 1) * sizeof(*ne));
        if (!ne)
                return err_set(err, ENOMEM, "tokens");
        a->e = ne;
        struct auth_entry *e = &a->e[a->n];
        e->tenant = strndup(tenant, tlen);
        e->token = strndup(token, klen);
        e->token_len = klen;
        if (!e->tenant || !e->token) {
                free(e->tenant);
                free(e->token);
                return err_set(err, ENOMEM, "tokens");
        }
        a->n++;
        return 0;
}

int auth_new_token(const char *token, struct auth **ret, struct err **err)
{
        size_t len = strlen(token);
        if (!name_ok(token, len, AUTH_MAX_TOKEN_LEN))
                return err_set(err, 0, "the token must be 1 to %d printable ASCII characters without spaces",
                               AUTH_MAX_TOKEN_LEN);
        struct auth *a;
        if (auth_new_open(&a, err) < 0)
                return -1;
        if (add(a, AUTH_DEFAULT_TENANT, strlen(AUTH_DEFAULT_TENANT), token, len, err) < 0) {
                auth_free(a);
                return -1;
        }
        *ret = a;
        return 0;
}

static int load_text(char *text, size_t len, struct auth **ret, struct err **err);

int auth_load_file(const char *path, struct auth **ret, struct err **err)
{
        char *text = NULL;
        size_t len = 0;
        if (read_file(path, 1u << 20, &text, &len, err) < 0)
                return -1;
        return load_text(text, len, ret, err);
}

int auth_load_fd(int fd, const char *path, struct auth **ret, struct err **err)
{
        char *text = NULL;
        size_t len = 0;
        if (read_fd(fd, path, 1u << 20, &text, &len, err) < 0)
                return -1;
        return load_text(text, len, ret, err);
}

/* The file's text (taken). */
static int load_text(char *text, size_t len, struct auth **ret, struct err **err)
{
        if (memchr(text, '\0', len)) {
                free(text);
                return err_set(err, 0, "holds a NUL byte (expected lines 'TENANT TOKEN', or one token)");
        }
        struct auth *a;
        if (auth_new_open(&a, err) < 0) {
                free(text);
                return -1;
        }
        size_t lineno = 0, singles = 0, pairs = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                lineno++;
                size_t l = strlen(line);
                while (l && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
                        line[--l] = '\0';
                char *p = line;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p || *p == '#')
                        continue;
                char *f1 = p;
                size_t l1 = strcspn(f1, " \t");
                char *f2 = f1 + l1;
                while (*f2 == ' ' || *f2 == '\t')
                        f2++;
                size_t l2 = strcspn(f2, " \t");
                if (f2[l2]) {
                        err_set(err, 0, "line %zu has more than two fields (expected 'TENANT TOKEN')", lineno);
                        goto fail;
                }
                if (!l2) {
                        if (!name_ok(f1, l1, AUTH_MAX_TOKEN_LEN)) {
                                err_set(err, 0, "line %zu: a token must be 1 to %d printable ASCII characters",
                                        lineno, AUTH_MAX_TOKEN_LEN);
                                goto fail;
                        }
                        singles++;
                        if (add(a, AUTH_DEFAULT_TENANT, strlen(AUTH_DEFAULT_TENANT), f1, l1, err) < 0)
                                goto fail;
                        continue;
                }
                if (!name_ok(f1, l1, 64)) {
                        err_set(err, 0, "line %zu: a tenant name must be 1 to 64 printable ASCII characters", lineno);
                        goto fail;
                }
                if (!name_ok(f2, l2, AUTH_MAX_TOKEN_LEN)) {
                        err_set(err, 0, "line %zu: a token must be 1 to %d printable ASCII characters", lineno,
                                AUTH_MAX_TOKEN_LEN);
                        goto fail;
                }
                pairs++;
                if (add(a, f1, l1, f2, l2, err) < 0) {
                        err_wrap(err, "line %zu", lineno);
                        goto fail;
                }
        }
        if (singles && (pairs || singles > 1)) {
                err_set(err, 0, "mixes bare tokens with 'TENANT TOKEN' lines (expected one token, or every line "
                                "'TENANT TOKEN')");
                goto fail;
        }
        if (a->n == 0) {
                err_set(err, 0, "holds no token (expected one token, or lines 'TENANT TOKEN')");
                goto fail;
        }
        free(text);
        *ret = a;
        return 0;
fail:
        free(text);
        auth_free(a);
        return -1;
}

void auth_free(struct auth *a)
{
        if (!a)
                return;
        for (size_t i = 0; i < a->n; i++) {
                explicit_bzero(a->e[i].token, a->e[i].token_len);
                free(a->e[i].token);
                free(a->e[i].tenant);
        }
        free(a->e);
        free(a);
}

bool auth_required(const struct auth *a)
{
        return a && a->n > 0;
}

size_t auth_tenant_count(const struct auth *a)
{
        return a ? a->n : 0;
}

const char *auth_check(const struct auth *a, const char *authorization)
{
        if (!auth_required(a))
                return AUTH_DEFAULT_TENANT;
        if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
                return NULL;
        const char *tok = authorization + 7;
        while (*tok == ' ')
                tok++;
        size_t len = strlen(tok);
        while (len && tok[len - 1] == ' ')
                len--;
        const char *found = NULL;
        for (size_t i = 0; i < a->n; i++) {
                bool eq = auth_equal(tok, len, a->e[i].token, a->e[i].token_len);
                /* No early exit: every token is compared. */
                found = eq ? a->e[i].tenant : found;
        }
        return found;
}

bool auth_sees(const char *tenant, const char *owner)
{
        return tenant && owner && (strcmp(tenant, AUTH_ADMIN_TENANT) == 0 || strcmp(tenant, owner) == 0);
}

void server_banner(const struct policy *p, const struct auth *a, const struct store *st, const char *listen_desc,
                   bool quiet)
{
        if (!quiet) {
                char pdesc[512];
                policy_describe(p, pdesc, sizeof(pdesc));
                fprintf(stderr, "Policy: %s\n", pdesc);
                fprintf(stderr, "Tokens: %s\n",
                        !auth_required(a) ? "none (loopback only)" : auth_tenant_count(a) == 1 ? "one" : "per tenant");
                /* The URL's password is redacted (store_path). */
                if (st)
                        fprintf(stderr, "Store: %s %s\n", store_kind(st), store_path(st));
                /* Replicas: the id this server's leases carry (docs/scale-out.md). */
                if (st && store_owner(st))
                        fprintf(stderr, "Replica: %s (leases of %u s)\n", store_owner(st), store_lease_ms(st) / 1000u);
        }
        fprintf(stderr, "Listening: %s\n", listen_desc);
        fflush(stderr);
}
