/* long_abbrev.h — dtctl's abbreviated long options, resolved among its
 * own options only. */
#ifndef DT_CLI_LONG_ABBREV_H
#define DT_CLI_LONG_ABBREV_H

#include <getopt.h>

/* Rewrites each abbreviated long option in argv[1..end) ("--lau",
 * "--max-r=3") to its full name when exactly one option of opts whose
 * val refused() rejects not has that prefix. getopt_long alone counts
 * the other tools' options dtctl refuses with advice (--log-dir,
 * --local-addr): "--l" for --launcher was then "unknown". shortopts
 * tells which short options take the next word as their value. 0, or 2
 * when an abbreviation fits several of dtctl's options (said, with
 * them). */
int dt_cli_expand_abbrev(int end, char **argv, const struct option *opts,
                         const char *shortopts, int (*refused)(int val));

#endif
