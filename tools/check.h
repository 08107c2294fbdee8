/* What the two forms of `tandem check` (check.c: rigid poses; check_robot.c:
 * joint-space configurations) share. */
#ifndef TDM_TOOLS_CHECK_H
#define TDM_TOOLS_CHECK_H

#include <stdio.h>

#include "../workpile/sched.h"

/* The timed loop: the n queries of one scene described by proto (tdm_sched_run_poses:
 * poses side by side from proto->poses) through sched in runs of `chunk` (res has room
 * for chunk answers, answer for n), then the report (tdm_cli_report: --out and
 * the summary line; out, if any, is taken and closed). `seconds` times the
 * scheduler's runs only. The scheduler re-runs on the CPU engine what a GPU
 * engine fails on (saying so on stderr): the answers would stand, but they are
 * not the asked-for engine's figures, so that is an error here. Returns 0, or -1
 * with a message printed. */
int tdm__check_run(tdm_sched *sched, tdm_backend_kind kind, const char *backend_s, const tdm_sched_query *proto,
                   const tdm_kin *kin, const double *configs, size_t n, size_t chunk, tdm_mode mode,
                   tdm_sched_result *res, uint32_t *answer, FILE *out, const char *out_path, uint64_t max_contacts);

#endif
