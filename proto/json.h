/* proto/json.h — JSON text, exactly: the values an agent hands the parent
 * are carried as the engine's own JSON text, checked here and never printed
 * again by a library that would round numbers or cut strings
 * (docs/decisions.md, "Values are carried as the worker's JSON text").
 *
 * Three layers (json.c, json-span.c, json-text.c):
 *  - json_validate: is this one RFC 8259 JSON value?  Strict (UTF-8 checked,
 *    no trailing bytes, no comments), plus `\udXXX` escapes that name lone
 *    surrogates — JSON.stringify writes those for strings that hold them.
 *    Limits on nesting and on the number of values; an error names the
 *    byte where the text stops being JSON.
 *  - spans: find an object's member, walk an array or object, and copy a
 *    value without its insignificant whitespace, all without building a
 *    tree.  They take any bytes (they never read out of bounds) but only
 *    answer reliably for validated text.
 *  - text: decode a string literal to its exact bytes (NUL kept), encode
 *    bytes as JSON.stringify does, format a double as JavaScript's
 *    Number.prototype.toString.
 * proto/json-cjson.c builds cJSON trees from validated text for code that
 * only reads them, and cJSON "raw" nodes that carry text verbatim into the
 * envelopes cJSON prints.
 *
 * Leaf code: never prints, never exits.
 */
#ifndef CHIDORI_PROTO_JSON_H
#define CHIDORI_PROTO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* A piece of a longer text: not NUL-terminated. */
struct json_span {
        const char *p;
        size_t len;
};

enum json_kind {
        JSON_INVALID = 0,
        JSON_NULL,
        JSON_FALSE,
        JSON_TRUE,
        JSON_NUMBER,
        JSON_STRING,
        JSON_ARRAY,
        JSON_OBJECT,
};

/* Nesting allowed by default: far deeper than JSON.stringify output an
 * agent would send, shallow enough that nothing recursive here or in
 * cJSON (cJSON_Delete) comes near the stack's end. */
#define JSON_DEPTH_MAX 10000u

struct json_limits {
        size_t max_depth;   /* arrays and objects inside each other; 0 = JSON_DEPTH_MAX */
        size_t max_values;  /* values of any kind (keys not counted); 0 = no limit */
};

enum json_errc {
        JSON_E_SYNTAX = 1,  /* not JSON (what and where in the error) */
        JSON_E_DEPTH,       /* nested deeper than max_depth */
        JSON_E_VALUES,      /* more than max_values values */
        JSON_E_NOMEM,       /* a max_depth beyond JSON_DEPTH_MAX needs memory that was not there */
};

struct json_error {
        enum json_errc code;
        size_t offset;      /* byte where the text stops being JSON (len: it ended too early) */
        char what[96];      /* "unexpected character 'x'", "invalid UTF-8 in a string", ... */
};

/* Is text[0..len) exactly one JSON value, with optional whitespace around
 * it?  0 yes (*ret_values, may be NULL, is its number of values); -1 no,
 * *ret_err (may be NULL) says why and where.  lim NULL = the defaults. */
int json_validate(const char *text, size_t len, const struct json_limits *lim, struct json_error *ret_err,
                  size_t *ret_values);

/* Is s[0..len) well-formed UTF-8 (no overlong forms, no surrogates)? */
bool json_utf8_valid(const char *s, size_t len);

/* 1-based line and column (in bytes) of `offset` in text, for messages. */
void json_line_col(const char *text, size_t len, size_t offset, size_t *ret_line, size_t *ret_col);

/* ---- spans (of validated text; json-span.c) ---- */

/* The span without surrounding whitespace. */
struct json_span json_trim(struct json_span v);
enum json_kind json_kind_of(struct json_span v);
/* Bytes of the value that starts at p[0] (no whitespace before it), or 0
 * when no whole value starts there. */
size_t json_value_len(const char *p, size_t len);

/* Member `key` (key_len bytes, compared with the member names' decoded
 * bytes) of the object v.  The first of equal names wins, as in cJSON.
 * 1 found (*ret its value), 0 absent, -1 v is not an object. */
int json_object_get(struct json_span v, const char *key, size_t key_len, struct json_span *ret);

/* Walk an array's elements or an object's members in order. */
struct json_iter {
        const char *p;
        size_t len, off;
        bool object, first, done;
};
/* -1 if v is neither an array nor an object. */
int json_iter_init(struct json_iter *it, struct json_span v);
/* 1 next one (*ret_key: the member's name as a string literal span, or
 * {NULL, 0} in an array; may be NULL), 0 no more, -1 malformed. */
int json_iter_next(struct json_iter *it, struct json_span *ret_key, struct json_span *ret_value);

/* A malloc'd, NUL-terminated copy of v without whitespace outside strings:
 * the same value, the same text otherwise (numbers and escapes as
 * written).  *ret_len (may be NULL) its length.  NULL: out of memory. */
char *json_compact(struct json_span v, size_t *ret_len);

/* Where two values first differ, for a message: 0 when their compact
 * texts are equal; 1 when not, with the path below `root` in path
 * ("args.value[3]", "args.items[\"a b\"]") and the two parts that differ
 * (a member name where the names differ; {NULL, 0} where one side has no
 * element).  Nesting past 64 levels is reported as one difference. */
int json_diff(struct json_span a, struct json_span b, const char *root, char *path, size_t path_len,
              struct json_span *ret_a, struct json_span *ret_b);

/* ---- text (json-text.c) ---- */

/* How a lone surrogate (`\ud800` with no partner) is decoded. */
enum json_decode_flags {
        JSON_DECODE_REPLACE = 0, /* U+FFFD, as Node writes such a string as UTF-8 (file contents) */
        JSON_DECODE_WTF8 = 1,    /* its 3-byte generalized UTF-8 form, which json_string_encode with
                                  * JSON_ENCODE_WTF8 turns back into the same escape (carried values) */
};

/* The bytes of the string literal v (quotes included in v): malloc'd,
 * NUL-terminated (a NUL inside is kept and counted in *ret_len).  -1 when v
 * is not a well-formed string literal, or out of memory (errno ENOMEM). */
int json_string_decode(struct json_span v, unsigned flags, char **ret, size_t *ret_len);
/* Do the decoded bytes of literal v equal s[0..len)?  (No allocation.) */
bool json_string_equals(struct json_span v, const char *s, size_t len);

enum json_encode_flags {
        JSON_ENCODE_WTF8 = 1,    /* 3-byte encoded surrogates become \udXXX (a high one followed by a
                                  * low one: the character they pair into); else they are invalid */
        JSON_ENCODE_RAW = 2,     /* json_string_encode_to: bytes >= 0x80 as they are */
};

/* bytes as a JSON string literal, exactly as JSON.stringify writes the
 * string Node gets from decoding them as UTF-8: '"', '\\', \b \f \n \r \t
 * and the other C0 controls as \u00XX escaped; invalid UTF-8 as U+FFFD
 * (one per maximal invalid subpart, as the WHATWG decoder does); all else,
 * U+2028/U+2029 and astral characters included, as it is.  malloc'd,
 * NUL-terminated; NULL: out of memory. */
char *json_string_encode(const char *bytes, size_t len, unsigned flags, size_t *ret_len);

/* The same literal written into out (no NUL), or only measured when out is
 * NULL; returns its length.  With JSON_ENCODE_RAW, bytes >= 0x80 are copied
 * as they are, valid UTF-8 or not (what cJSON's printer does). */
size_t json_string_encode_to(const char *bytes, size_t len, unsigned flags, char *out);

/* d as JavaScript's String(d) / JSON.stringify(d) writes it: the shortest
 * digits that read back as d, positional notation for 1e-7 < |d| < 1e21,
 * else "1e-7", "1.5e+300"; -0 is "0"; NaN and the infinities "null".
 * Returns the length written into buf (at most JSON_NUMBER_MAX - 1). */
#define JSON_NUMBER_MAX 32
size_t json_format_number(double d, char buf[JSON_NUMBER_MAX]);

/* ---- cJSON (proto/json-cjson.c) ---- */

/* A tree of validated text for code that reads it: strings decoded with
 * JSON_DECODE_REPLACE and cut at a NUL (cJSON strings are C strings),
 * numbers by strtod.  Members of the top-level object named in raw_members
 * (NULL-terminated, may be NULL) become raw nodes of their compact text
 * instead: carried, never rebuilt.  With raw_children every element or
 * member of the top-level array or object does.  NULL: out of memory, or
 * the text is not valid. */
struct cJSON *json_to_cjson(struct json_span v, const char *const *raw_members, bool raw_children);
/* A raw node (printed verbatim by cJSON) of v's compact text. */
struct cJSON *json_cjson_raw(struct json_span v);
/* A raw node that borrows `text` (valid JSON, NUL-terminated), which must
 * outlive it: cJSON_Delete leaves the text alone. */
struct cJSON *json_cjson_raw_ref(const char *text);
/* A string node for bytes that may be anything (a file name, a tool's
 * stderr): a plain cJSON string when cJSON prints it as JSON.stringify
 * would (valid UTF-8 without a NUL), else a raw node of
 * json_string_encode(bytes, len, flags). */
struct cJSON *json_cjson_string(const char *bytes, size_t len, unsigned flags);
/* A number node: integers that cJSON prints exactly as plain numbers,
 * every other double as a raw node in JavaScript's format. */
struct cJSON *json_cjson_number(double d);
/* An operator's JSON file (a policy, the tools file, secrets, quotas) as a
 * tree: text[0..len) must be one strict JSON value (json_validate; a
 * leading byte-order mark is skipped) of at most max bytes.  0 and *ret;
 * else one of these and msg, without the file's name. */
enum json_file_errc {
        JSON_FILE_TOO_BIG = 1, /* "larger than the 1 MiB limit (M bytes)" */
        JSON_FILE_SYNTAX,      /* "not valid JSON at line L, column C: what" or "... (a NUL byte)" */
        JSON_FILE_NOMEM,       /* "out of memory" */
};
int json_file_parse(const char *text, size_t len, size_t max, struct cJSON **ret, char *msg, size_t msgsz);
/* The text of a raw node or of any other node (cJSON_PrintUnformatted);
 * malloc'd.  NULL: out of memory. */
char *json_cjson_text(const struct cJSON *node);

#endif
