/* runtime/header.c — the journal's header line (header.h). */
#include "runtime/header.h"

#include <cjson/cJSON.h>

#include "common/util.h"

cJSON *journal_header_line(const struct journal_header_info *i)
{
        char ts[40];
        utc_iso8601(ts, sizeof(ts));
        cJSON *h = cJSON_CreateObject();
        if (!h)
                return NULL;
        cJSON_AddStringToObject(h, "type", "header");
        cJSON_AddStringToObject(h, "chidori", i->version);
        cJSON_AddNumberToObject(h, "protocol", 1);
        cJSON_AddStringToObject(h, "run_id", i->run_id);
        cJSON_AddStringToObject(h, "agent", i->agent);
        cJSON_AddStringToObject(h, "agent_sha256", i->agent_sha256);
        cJSON_AddStringToObject(h, "filename", i->filename);
        cJSON_AddStringToObject(h, "memory_ns", i->memory_ns);
        /* A replay runs in the same zone. */
        cJSON_AddStringToObject(h, "tz", i->tz && i->tz[0] ? i->tz : "UTC");
        /* The clock the run's timers used; replay uses the same.  Journals
         * without it are older, from when timers were always virtual. */
        cJSON_AddStringToObject(h, "time", i->virtual_time ? "virtual" : "real");
        /* Values (args, results, input) are the JSON text the worker wrote,
         * recorded as it is; replay compares args as text.  Journals
         * without it are older: their values were printed again by cJSON. */
        cJSON_AddStringToObject(h, "values", "exact");
        cJSON_AddItemToObject(h, "input", i->input ? cJSON_Duplicate(i->input, 1) : cJSON_CreateNull());
        if (i->env) /* process.env: replay hands the agent the same values */
                cJSON_AddItemToObject(h, "env", cJSON_Duplicate(i->env, 1));
        cJSON_AddStringToObject(h, "started", ts);
        return h;
}
