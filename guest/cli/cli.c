/* Command-line helpers shared by the guest programs; see cli.h. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *cli_prog = "femu";

void cli_usage_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", cli_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see %s help)\n", cli_prog);
    exit(EXIT_USAGE);
}

uint64_t cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
        cli_usage_error("%s must be an integer in %" PRIu64 "..%" PRIu64 " (got '%s')", opt,
                        min, max, s);
    }
    return v;
}
