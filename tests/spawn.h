/* Running a program the suites test (the real `tandem` binary) with its output
 * captured. */
#ifndef TDM_TESTS_SPAWN_H
#define TDM_TESTS_SPAWN_H

typedef struct tdm_run_result {
    int status;     /* the exit code, or 128 + the signal that ended it */
    char *out, *err; /* everything it wrote to stdout and stderr, NUL-terminated, owned */
} tdm_run_result;

/* Runs bin with args (NULL-terminated, at most 62), its stdout and stderr sent
 * to the files out_path and err_path, waits for it and reads them back into *r.
 * Returns 0, or an errno value when it could not be started, waited for or read
 * (*r is then untouched). */
int tdm_run_capture(const char *bin, const char *const *args, const char *out_path, const char *err_path,
                    tdm_run_result *r);
void tdm_run_free(tdm_run_result *r);

#endif
