/* tests/spawn.h */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "gen.h"

extern char **environ;

int tdm_run_capture(const char *bin, const char *const *args, const char *out_path, const char *err_path,
                    tdm_run_result *r)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    while (*args && n < 63) argv[n++] = *args++;
    if (*args) return E2BIG;
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return rc;
    int st;
    if (waitpid(pid, &st, 0) != pid) return errno;
    char *out = gen_read_file(out_path, NULL), *err = gen_read_file(err_path, NULL);
    if (!out || !err) {
        free(out);
        free(err);
        return EIO;
    }
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = out;
    r->err = err;
    return 0;
}

void tdm_run_free(tdm_run_result *r)
{
    free(r->out);
    free(r->err);
}
