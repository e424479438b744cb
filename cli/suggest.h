/* cli/suggest.h — what every subcommand's option parsing shares: a bad
 * option named with the nearest real one, and usage errors printed as JSON
 * on stdout when --json was asked for.
 *
 * Each command parses with getopt_long and opterr = 0 (getopt prints
 * nothing) and hands '?' and ':' to cli_bad_option, which says what was
 * wrong: an unknown option (with "did you mean"), an ambiguous abbreviation,
 * a missing value, or a value given to a flag. */
#ifndef CHIDORI_CLI_SUGGEST_H
#define CHIDORI_CLI_SUGGEST_H

#include <getopt.h>
#include <stddef.h>

/* After getopt_long returned '?' or ':' (opterr = 0): print what was wrong
 * with the option at argv[optind - 1] (or optopt), the nearest option of
 * `longopts` when one is close, and "Try 'chidori CMD --help'".  Returns 2. */
int cli_bad_option(const char *cmd, int argc, char **argv, const struct option *longopts);

/* Optimal string alignment distance (Levenshtein plus adjacent
 * transpositions): "jounral" is 1 from "journal". */
size_t cli_distance(const char *a, const char *b);

/* The candidate closest to `word`, or NULL when none is close enough to be
 * what was meant (at most 1 edit for short words, 2 up to 6 characters, 3
 * beyond).  The first of equally close candidates wins. */
const char *cli_nearest(const char *word, const char *const *cands, size_t n);

/* --json for usage errors.  cli_json_begin looks for --json among the
 * options of argv (before a "--"); when it is there, what the command prints
 * on stderr is also kept, and cli_json_end(2) prints
 *   {"ok":false,"error":{"name":"UsageError","message":"..."},"exit":2}
 * on stdout with the last `chidori:` message.  cli_json_stop ends the
 * capture (the run has started: its own --json output follows).  cli_json_end
 * returns code and is idempotent. */
void cli_json_begin(int argc, char **argv);
void cli_json_stop(void);
int cli_json_end(int code);
/* The line cli_json_end(2) would print now (malloc'd), or NULL without
 * --json: chidori-monitor prints it for a run that ends with 2. */
char *cli_json_usage_line(void);

#endif
