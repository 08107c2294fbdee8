/* What `tandem check --urdf` (check_robot.c) and `tandem motions` (motions_cmd.c)
 * share: reading a file of number records, and setting up (and tearing down) a
 * URDF robot in a MoveIt planning scene run through a tdm_sched.
 *
 * Contract. Every function prints its own error with tdm_cli_error (the message is
 * part of the commands' output and is kept as it was) and returns 0, or -1 after
 * printing; the caller only maps -1 to its exit status.
 *
 * Number files (tdm__robot_read_lines): one record of exactly `count` numbers a
 * line, separated by white space; blank lines and lines whose first non-blank
 * character is '#' are skipped. Errors, each prefixed "WHAT: ":
 *   "cannot read PATH: STRERROR"                    (open or read failure)
 *   "out of memory"                                 (also when grow fails)
 *   "PATH:LINE: value I is not a number"            (I counts from 1)
 *   "PATH:LINE: value I is not finite"
 *   "PATH:LINE: K values, EXPECT"                   (K != count; EXPECT the caller's)
 * On success *out holds n * count values (record i at out + i * count) and is the
 * caller's to free; on failure nothing is returned and nothing is left allocated
 * by the parser (what grow/record keep in ctx stays the caller's).
 *
 * Robot set-up (tdm__robot_run), in the commands' order: tdm__robot_open (robot,
 * then world), [the caller reads its file: n_q = run->robot->n_active],
 * tdm__robot_scene, [the caller opens its output, sizes its runs],
 * tdm__robot_sched (the scheduler, then the robot scene's trees added to it).
 * tdm__robot_close undoes whatever of these was done: call it once, on a run
 * that was zero-initialised (TDM__ROBOT_RUN_INIT), whether or not the steps
 * succeeded. */
#ifndef TDM_TOOLS_ROBOT_RUN_H
#define TDM_TOOLS_ROBOT_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "../robot/robot_scene.h"
#include "../workpile/sched.h"

typedef struct tdm__robot_lines {
    const char *what;   /* error prefix: "configs", "motions" */
    size_t count;       /* numbers a record has */
    const char *expect; /* the end of the wrong-count error: "the robot has 6 active joints" */
    /* Optional: called when the record storage grows to cap records (before the
     * line that needs it is parsed); -1 is reported as "WHAT: out of memory". */
    int (*grow)(void *ctx, size_t cap);
    /* Optional: called on each good record (index i, read at PATH:LINE, its count
     * values v); on -1 (after it printed its error) the read fails. */
    int (*record)(void *ctx, const char *path, size_t lineno, size_t i, const double *v);
    void *ctx;
} tdm__robot_lines;

int tdm__robot_read_lines(const char *path, const tdm__robot_lines *spec, double **out, size_t *n_out);

typedef struct tdm__robot_run {
    tdm_robot *robot;
    tdm_planning_scene *ps;
    tdm_robot_scene *rs;
    tdm_sched *sched;
    uint32_t n_added; /* the robot scene's trees added to sched */
    const char *world; /* the planning scene's path (borrowed), for messages */
} tdm__robot_run;

#define TDM__ROBOT_RUN_INIT {NULL, NULL, NULL, NULL, 0, NULL}

/* Loads the URDF (and SRDF, may be NULL) and the planning scene `world`.
 * Errors: "robot: ...", "world: ...". */
int tdm__robot_open(tdm__robot_run *run, const char *urdf, const char *srdf, const char *world);

/* Builds the robot scene (meshes loaded raw, TDM_PRIMITIVE_TOLERANCE).
 * Error: "WHAT: ..." (WHAT the command: "check", "motions"), the world's path
 * before a message about its objects ("WHAT: WORLD: attached object ..."); one
 * about a robot element names the URDF already. */
int tdm__robot_scene(tdm__robot_run *run, const char *what);

/* Creates the scheduler (kind, threads, GPU streams; no calibration, one lane) and adds the
 * robot scene's trees. Errors: "cannot start the CPU|GPU|hybrid engine: ...",
 * "uploading the meshes to the GPU failed: ...". */
int tdm__robot_sched(tdm__robot_run *run, tdm_backend_kind kind, int threads, int gpu_streams);

/* Removes the added trees, destroys the scheduler, the robot scene, the planning
 * scene and the robot; leaves *run zeroed. */
void tdm__robot_close(tdm__robot_run *run);

#endif
