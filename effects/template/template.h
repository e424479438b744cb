/* effects/template/template.h — chidori.template(template, vars): mustache-style
 * substitution for building prompts and text.  The language, and why it does
 * no HTML escaping, is in docs/template.md.
 *
 *   {{ name }}        the variable (whitespace inside the braces is ignored)
 *   {{ user.name }}   walk objects; {{ items.0 }} indexes arrays
 *   \{{               a literal "{{"; \\{{ a backslash, then a substitution
 *
 * Strings insert verbatim; numbers as JavaScript prints them; true, false and
 * null as words; objects and arrays as compact JSON.  A missing variable, a
 * malformed tag or an unterminated "{{" is an error naming the line. */
#ifndef CHIDORI_EFFECTS_TEMPLATE_H
#define CHIDORI_EFFECTS_TEMPLATE_H

struct cJSON;
struct err;

#define TEMPLATE_OUTPUT_MAX (16u * 1024u * 1024u)  /* bytes, without the NUL */
#define TEMPLATE_DEPTH_MAX 1000                    /* nesting of an inserted value */
/* The work budget: steps (hash probes, members indexed) per byte of
 * template and per member of the objects and arrays the template looks
 * into.  An ordinary template uses 1 to 3. */
#define TEMPLATE_WORK_PER_UNIT 16u

/* err->code when a limit stopped the render: the output cap or the work
 * budget (the broker answers these with code "ELIMIT"). */
enum { TEMPLATE_E_LIMIT = 1 };

/* Render `tpl` with `vars` (a JSON object; NULL means no variables).  One pass
 * over the template; a name is looked up through a hash index of each object
 * or array on the path (built on first use), so the work is linear in the
 * template, the containers looked into and the output, and is counted
 * against TEMPLATE_WORK_PER_UNIT.  On success *ret is a malloc'd
 * NUL-terminated string the caller frees; on failure *ret is untouched and
 * the error says what and on which line. */
int template_render(const char *tpl, const struct cJSON *vars, char **ret, struct err **err);

/* template_render() that gives up when `budget` is over (deadline, stop
 * signal; common/budget.h), checked at every tag: the error's errnum is
 * ETIMEDOUT or EINTR.  budget may be NULL. */
struct budget;
int template_render_until(const char *tpl, const struct cJSON *vars, const struct budget *budget, char **ret,
                          struct err **err);

#endif
