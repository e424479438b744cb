/* tests/fuzz/fuzz_template.c — libFuzzer target for chidori.template
 * (effects/template/template.c): the template and its variables both come
 * from the agent.  The input splits at the first "\n--\n": the template
 * before, the vars (a JSON object, parsed as a frame's args are) after; with
 * no separator the whole input is the template over a fixed set of vars.
 * Crashes on a broken invariant, not only on memory errors. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "effects/template/template.h"
#include "proto/json.h"

static const char canned[] =
        "{\"name\":\"Ada\",\"user\":{\"name\":\"Ada\",\"langs\":[\"en\",\"fr\"],\"addr\":{\"city\":{\"name\":\"Paris\"}}},"
        "\"items\":[{\"title\":\"first\"},{\"title\":\"second\"}],\"m\":{\"0\":\"zero\"},\"grid\":[[1,2],[3,4]],"
        "\"t\":true,\"f\":false,\"n\":null,\"i\":3,\"d\":2.5,\"e\":1e21,\"s\":\"<b>\\\"q\\\"\\n</b>\",\"a\":[1,\"two\",[]]}";

static void render(const char *tpl, const cJSON *vars)
{
        char *out = (char *)0x1;
        struct err *e = NULL;
        if (template_render(tpl, vars, &out, &e) == 0) {
                if (!out || strlen(out) > TEMPLATE_OUTPUT_MAX)
                        abort();
                /* Without a tag the template is its own output. */
                if (!strstr(tpl, "{{") && strcmp(out, tpl) != 0)
                        abort();
                free(out);
        } else {
                /* On failure the output is untouched and the message names the module. */
                if (out != (char *)0x1 || !err_msg(e) || strncmp(err_msg(e), "template: ", 10) != 0)
                        abort();
        }
        err_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 65536)
                return 0;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        char *sep = memmem(text, size, "\n--\n", 4);
        cJSON *vars = NULL;
        if (sep) {
                *sep = '\0';
                const char *vj = sep + 4;
                size_t vlen = size - (size_t)(vj - text);
                if (json_validate(vj, vlen, NULL, NULL, NULL) == 0)
                        vars = json_to_cjson((struct json_span){ vj, vlen }, NULL, false);
                if (!vars)
                        vars = cJSON_ParseWithLength(vj, vlen);
        } else {
                vars = cJSON_Parse(canned);
        }
        render(text, vars);
        if (!vars || cJSON_IsObject(vars))
                render(text, NULL);
        cJSON_Delete(vars);
        free(text);
        return 0;
}
