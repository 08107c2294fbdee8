/* How long a robot scene's put and delete take, one after the other, on one
 * connection: what every OMPL problem costs before and after its solve
 * (examples/ompl's ompl_plan stores each problem's planning scene and deletes it
 * after, serialised across its planners). bench/results/rrt_regression.md.
 *
 *   bench_scene_put ADDR URDF SRDF N SCENE.yaml...
 *
 * Stores the robot, then N times stores a robot scene (the SCENE files in turn) and
 * deletes it when it was new. Prints one line:
 *   RESULT cycles=N put_ms=X delete_ms=Y
 * (means over the cycles). Exit status 1 when a call failed. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tandem/tandem.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 6 || atoi(argv[4]) < 1) {
        fprintf(stderr, "usage: bench_scene_put ADDR URDF SRDF N SCENE.yaml...\n");
        return 2;
    }
    int n = atoi(argv[4]), n_files = argc - 5;
    tdm_client *c = tdm_client_connect(argv[1], 10000);
    if (!c || tdm_client_err(c)) {
        fprintf(stderr, "bench_scene_put: %s: %s\n", argv[1], c ? tdm_client_errstr(c) : "out of memory");
        return 1;
    }
    uint8_t rid[TDM_ID_BYTES], sid[TDM_ID_BYTES];
    if (tdm_robot_put_files(c, NULL, argv[2], argv[3], rid, NULL, NULL)) {
        fprintf(stderr, "bench_scene_put: robot: %s\n", tdm_client_errstr(c));
        return 1;
    }
    double put = 0, del = 0;
    for (int i = 0; i < n; i++) {
        const char *scene = argv[5 + i % n_files];
        int created = 0;
        double t0 = now_ms();
        if (tdm_robot_scene_put_file(c, "bench", rid, scene, sid, &created, NULL)) {
            fprintf(stderr, "bench_scene_put: %s: %s\n", scene, tdm_client_errstr(c));
            return 1;
        }
        double t1 = now_ms();
        if (created && tdm_scene_delete(c, sid)) {
            fprintf(stderr, "bench_scene_put: delete: %s\n", tdm_client_errstr(c));
            return 1;
        }
        put += t1 - t0;
        del += now_ms() - t1;
    }
    printf("RESULT cycles=%d put_ms=%.3f delete_ms=%.3f\n", n, put / n, del / n);
    tdm_client_free(c);
    return 0;
}
