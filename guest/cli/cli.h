/*
 * Command-line helpers shared by this repository's guest programs: one way to refuse a
 * bad argument (exit status 2, the program's name and where to read its help) and to
 * read a bounded integer.
 */
#ifndef GUEST_CLI_H
#define GUEST_CLI_H

#include <stdint.h>

#define EXIT_USAGE 2            /* bad command line or cannot open the device */

/* The program's name in messages; main sets it. */
extern const char *cli_prog;

void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* s as an integer (decimal, 0x hex or 0 octal) in min..max, or a usage error naming opt. */
uint64_t cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max);

#endif
