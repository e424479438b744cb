/* effects/net/secrets.h — secrets by reference (issue 19 item 1; docs/secrets.md).
 *
 * The operator declares secrets in a JSON file (`--secrets FILE`,
 * CHIDORI_SECRETS):
 *
 *      {"NAME": {"from_env": "VAR" | "from_file": "PATH", "hosts": ["HOST[:PORT]", ...]}, ...}
 *
 * The values are read on the operator's side (the CLI, or `chidori serve`)
 * and held here in memory only, wiped when the table is freed.  An agent
 * writes the placeholder {{secret:NAME}} inside a request header value of
 * fetch; the broker (effects/net/fetch.c) asks secrets_fill to substitute
 * it for each hop of the request, which succeeds only when the hop's host
 * and port are among the secret's hosts.  Nothing here prints; no message
 * ever quotes a value.
 */
#ifndef CHIDORI_EFFECTS_NET_SECRETS_H
#define CHIDORI_EFFECTS_NET_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct secrets;

#define SECRETS_FILE_MAX (1u << 20)  /* the JSON file */
#define SECRETS_MAX 256              /* secrets in one file */
#define SECRETS_NAME_MAX 64          /* [A-Za-z0-9_.-] */
#define SECRETS_VALUE_MAX 3500       /* bytes: one string of the broker's config blob carries it */
#define SECRETS_HOSTS_MAX 64         /* hosts of one secret */
#define SECRETS_HOST_MAX 255         /* one HOST[:PORT] */

/* err_code() of the errors below. */
enum {
        SECRETS_E_CONFIG = 1, /* the file or a value: the operator's mistake (exit 2) */
        SECRETS_E_UNKNOWN,    /* a placeholder names a secret that is not declared */
        SECRETS_E_HOST,       /* a secret for a host it is not declared for */
        SECRETS_E_POLICY,     /* the policy refused secret:NAME */
        SECRETS_E_SYNTAX,     /* a "{{secret:" that is not a placeholder */
};

typedef const char *(*secrets_getenv_fn)(const char *name);

/* The file at `path`: each value read now (from_env through `get`,
 * from_file relative to the file's folder).  -1 with err (code
 * SECRETS_E_CONFIG, the message naming the file and the problem, never a
 * value). */
int secrets_load(const char *path, secrets_getenv_fn get, struct secrets **ret, struct err **err);
/* The same from text; `origin` names it in messages, `dir` is where a
 * relative from_file is found (NULL: the working directory). */
int secrets_parse(const char *json, size_t len, const char *origin, const char *dir, secrets_getenv_fn get,
                  struct secrets **ret, struct err **err);

/* The table one entry at a time (the broker's config blob: secret=NAME
 * VALUE, secret_host=NAME HOST).  *s may be NULL (made).  The value is
 * checked as the file's are. */
int secrets_add(struct secrets **s, const char *name, const char *value, struct err **err);
int secrets_add_host(struct secrets *s, const char *name, const char *host, struct err **err);

size_t secrets_count(const struct secrets *s);
const char *secrets_name(const struct secrets *s, size_t i);
const char *secrets_value(const struct secrets *s, size_t i);
size_t secrets_nhosts(const struct secrets *s, size_t i);
const char *secrets_host(const struct secrets *s, size_t i, size_t k); /* as written */

/* Wipes every value, then frees.  NULL is fine. */
void secrets_free(struct secrets *s);

/* Does `value` hold "{{secret:"?  (The cheap test before secrets_fill.) */
bool secrets_has_placeholder(const char *value);

/* The policy's word on secret:NAME for a request to `url`: true allows;
 * false refuses with msg filled. */
typedef bool (*secrets_gate_fn)(void *arg, const char *name, const char *url, char *msg, size_t len);

/* Header `header`'s `value` for a hop to `url` (`host` as libcurl parsed
 * it, lower case, `port` the hop's port): every {{secret:NAME}} replaced
 * by NAME's value.  Each placeholder must be well formed, allowed by
 * `gate` (may be NULL: allowed), declared, and declared for this host and
 * port; else -1 with err (a code above; the message names the secret and
 * the host, never the value).  *ret is malloc'd: wipe it
 * (explicit_bzero) before freeing. */
int secrets_fill(const struct secrets *s, const char *header, const char *value, const char *url, const char *host,
                 long port, secrets_gate_fn gate, void *gate_arg, char **ret, struct err **err);

#endif
