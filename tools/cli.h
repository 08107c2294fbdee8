/* Shared pieces of the `tandem` subcommands: option parsing and error output. */
#ifndef TDM_TOOLS_CLI_H
#define TDM_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes: 0 success, 1 a runtime error (bad file, bad data), 2 a usage error. */
#define TDM_EXIT_FAIL 1
#define TDM_EXIT_USAGE 2

/* One long option "--name VALUE"; value is set when it appears. */
typedef struct tdm_opt {
    const char *name;
    const char **value;
} tdm_opt;

/* Parses argv[0..argc) as "--name value" pairs into opts. Prints an error and
 * returns -1 for an unknown option or a missing value. */
int tdm_cli_parse(int argc, char **argv, const tdm_opt *opts, size_t n_opts, const char *cmd);
/* Parses a whole number in [lo, hi]; prints an error naming opt and returns -1 otherwise. */
int tdm_cli_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* Index of value among the n names ("bool", "contacts"...); prints an error naming cmd and
 * opt and returns -1 when it is none of them. */
int tdm_cli_choice(const char *cmd, const char *opt, const char *value, const char *const *names, int n);
void tdm_cli_error(const char *fmt, ...);
double tdm_cli_now(void);
/* The ending every query command shares (check, query): writes answer[0..n) one per line to
 * out (when not NULL; closed here), warns about truncated counts, and prints the summary
 * line "queries=N seconds=S qps=Q colliding=C". Returns 0, or -1 when out could not be written. */
int tdm_cli_report(FILE *out, const char *out_path, const uint32_t *answer, size_t n, double seconds,
                   size_t colliding, size_t truncated, uint64_t max_contacts);

int tdm_cmd_check(int argc, char **argv);
/* `check --urdf ...`: joint-space queries (check_robot.c); tdm_cmd_check hands over to it. */
int tdm_cmd_check_robot(int argc, char **argv);
int tdm_cmd_poses(int argc, char **argv);
int tdm_cmd_demo(int argc, char **argv);
int tdm_cmd_robot(int argc, char **argv);
/* `motions --urdf ...`: motion checks of a URDF robot (motions_cmd.c). */
int tdm_cmd_motions(int argc, char **argv);

#endif
