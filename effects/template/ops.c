/* effects/template/ops.c — the `template` effect: the agent's template
 * rendered by effects/template/template.c, within the run's budget. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>

#include "common/cleanup.h"
#include "effects/template/template.h"
#include "runtime/runtime-internal.h"

/* template: pure string work in the parent, bounded output. */
int effect_template(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *tpl = NULL;
        if (broker_need_str(args, "template", "template", &tpl, err) < 0)
                return -1;
        const cJSON *vars = cJSON_GetObjectItemCaseSensitive(args, "vars");
        cJSON *empty = NULL;
        if (!vars || cJSON_IsNull(vars))
                vars = empty = cJSON_CreateObject();
        if (!cJSON_IsObject(vars)) {
                cJSON_Delete(empty);
                return err_set(err, 0, "template: 'vars' must be an object");
        }
        _cleanup_free_ char *out = NULL;
        int r = template_render_until(tpl, vars, &b->budget, &out, err);
        cJSON_Delete(empty);
        if (r < 0) {
                if (err_code(*err) == TEMPLATE_E_LIMIT) {
                        broker_limit_report(b, LIMIT_TEMPLATE, err_msg(*err));
                        (*err)->code = BROKER_E_LIMIT;  /* the agent sees code ELIMIT */
                }
                return -1;
        }
        *ret = cJSON_CreateString(out);
        return 0;
}
