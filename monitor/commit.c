/* monitor/commit.c — the broker's spawn allowlist (commit.h). */
#define _GNU_SOURCE
#include "monitor/commit.h"

#include <string.h>

#define REFUSE(...) err_setc(err, COMMIT_E_REFUSED, 0, __VA_ARGS__)

static bool path_ok(const char *p)
{
        if (p[0] != '/')
                return false;
        for (const char *s = p; (s = strstr(s, "..")); s += 2)
                if ((s == p || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
                        return false;
        return true;
}

static bool env_name_ok(const char *n)
{
        if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || *n == '_'))
                return false;
        for (n++; *n; n++)
                if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') || *n == '_'))
                        return false;
        return true;
}

static bool in(const char *const *list, size_t n, const char *s, size_t len)
{
        for (size_t i = 0; i < n; i++)
                if (strlen(list[i]) == len && memcmp(list[i], s, len) == 0)
                        return true;
        return false;
}

int monitor_commit_accept(struct monitor_commit *c, const struct chan_commit *m, int blob_fd, struct err **err)
{
        if (c->set)
                return REFUSE("a second COMMIT (the spawn allowlist is committed once)");
        size_t n = 1 + (size_t)m->n_commands + m->n_ro_binds + m->n_env_names;
        struct chan_blob b;
        if (chan_blob_map(blob_fd, n, &b, err) < 0)
                return err_wrap(err, "COMMIT");
        const char *const *s = b.strs;
        static const char path_rule[] = "an absolute path without ..";
        const char *bad = NULL, *rule = path_rule;
        /* The agent folder: "" while it is not known (a replay's, named by
         * the journal); the monitor keeps its own (serve.h agent_dir). */
        if (s[0][0] && !path_ok(s[0]))
                bad = "the agent folder";
        for (size_t i = 1; !bad && i < 1 + m->n_commands + m->n_ro_binds; i++)
                if (!path_ok(s[i]))
                        bad = i <= m->n_commands ? "a command" : "a read-only bind";
        for (size_t i = 1 + m->n_commands + m->n_ro_binds; !bad && i < n; i++)
                if (!env_name_ok(s[i]))
                        bad = "an environment variable name", rule = "letters, digits and _";
        if (bad) {
                chan_blob_unmap(&b);
                return REFUSE("COMMIT: %s is not %s", bad, rule);
        }
        *c = (struct monitor_commit){
                .set = true,
                .flags = m->flags,
                .blob = b,
                .agent_dir = s[0],
                .commands = s + 1,
                .n_commands = m->n_commands,
                .ro_binds = s + 1 + m->n_commands,
                .n_ro_binds = m->n_ro_binds,
                .env_names = s + 1 + m->n_commands + m->n_ro_binds,
                .n_env_names = m->n_env_names,
        };
        return 0;
}

int monitor_spawn_allowed(const struct monitor_commit *c, const struct chan_spawn *m, const struct chan_blob *spec,
                          struct err **err)
{
        if (!c->set)
                return REFUSE("SPAWN before COMMIT");
        if (m->kind != CHAN_BOX_TOOL)
                return 0;
        const char *const *s = spec->strs;
        if (spec->nstrings != 1 + (size_t)m->n_argv + m->n_env + m->n_binds)
                return REFUSE("SPAWN: the spec has %zu strings, the message counts %zu", spec->nstrings,
                              1 + (size_t)m->n_argv + m->n_env + m->n_binds);
        if (!in(c->commands, c->n_commands, s[0], strlen(s[0])))
                return REFUSE("SPAWN of a tool: '%.200s' is not a committed command", s[0]);
        if ((m->flags & CHAN_SPAWN_HOST) && !(c->flags & CHAN_COMMIT_UNSANDBOXED_TOOLS))
                return REFUSE("SPAWN of a tool outside a box: the COMMIT allows no \"sandbox\": false tool");
        if (m->deadline_ms == 0)
                return REFUSE("SPAWN of a tool without a timeout");
        /* Names only: the monitor gives them its own values. */
        for (size_t i = 1 + m->n_argv; i < 1 + m->n_argv + m->n_env; i++)
                if (!in(c->env_names, c->n_env_names, s[i], strlen(s[i])))
                        return REFUSE("SPAWN of a tool: environment variable '%.200s' is not committed", s[i]);
        for (size_t i = 1 + m->n_argv + m->n_env; i < spec->nstrings; i++)
                if (strncmp(s[i], "ro:", 3) != 0 || !in(c->ro_binds, c->n_ro_binds, s[i] + 3, strlen(s[i] + 3)))
                        return REFUSE("SPAWN of a tool: bind '%.200s' is not a committed read-only bind", s[i]);
        return 0;
}

int monitor_bundle_allowed(const struct monitor_commit *c, const struct chan_spawn *m, const struct chan_blob *spec,
                           const char *esbuild, const char **ret_dir, struct err **err)
{
        if (!c->set)
                return REFUSE("SPAWN before COMMIT");
        const char *const *s = spec->strs;
        if (spec->nstrings != 1 + (size_t)m->n_argv + m->n_env + m->n_binds)
                return REFUSE("SPAWN: the spec has %zu strings, the message counts %zu", spec->nstrings,
                              1 + (size_t)m->n_argv + m->n_env + m->n_binds);
        if (strcmp(s[0], esbuild) != 0)
                return REFUSE("SPAWN of a bundle: '%.200s' is not the esbuild the monitor found", s[0]);
        for (size_t i = 2; i < 1 + (size_t)m->n_argv; i++)
                if (strncmp(s[i], "--", 2) != 0)
                        return REFUSE("SPAWN of a bundle: argument '%.200s' is not an option", s[i]);
        if (m->n_env)
                return REFUSE("SPAWN of a bundle: it takes no environment");
        const char *b = m->n_binds == 1 ? s[1 + m->n_argv] : "";
        const char *dir = strncmp(b, "ro:", 3) == 0 ? b + 3 : NULL;
        size_t n = strlen(c->agent_dir);
        if (!dir || !path_ok(dir) || strncmp(dir, c->agent_dir, n) != 0 ||
            !(dir[n] == '\0' || dir[n] == '/' || strcmp(c->agent_dir, "/") == 0))
                return REFUSE("SPAWN of a bundle: its one bind must be ro: of the agent folder or below it");
        *ret_dir = dir;
        return 0;
}

void monitor_commit_free(struct monitor_commit *c)
{
        if (c->set)
                chan_blob_unmap(&c->blob);
        memset(c, 0, sizeof(*c));
}
