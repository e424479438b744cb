/* runtime/header.h — a journal's first line, built in one place for every
 * client of the session engine (chidori run, chidori-broker, chidori serve):
 * what a replay needs to run the same agent the same way. */
#ifndef CHIDORI_RUNTIME_HEADER_H
#define CHIDORI_RUNTIME_HEADER_H

#include <stdbool.h>

struct cJSON;

struct journal_header_info {
        const char *version;       /* CHIDORI_VERSION */
        const char *run_id;
        const char *agent;         /* absolute path, or "-": read from stdin */
        const char *agent_sha256;
        const char *filename;
        const char *memory_ns;
        const char *tz;            /* NULL: UTC */
        bool virtual_time;         /* --virtual-time */
        const struct cJSON *input; /* NULL: null */
        const struct cJSON *env;   /* process.env (--env); NULL: none */
};

/* {"type":"header", chidori, protocol, run_id, agent, agent_sha256,
 * filename, memory_ns, tz, time ("real"|"virtual"), values ("exact"),
 * input, env?, started}.  NULL when out of memory. */
struct cJSON *journal_header_line(const struct journal_header_info *i);

#endif
