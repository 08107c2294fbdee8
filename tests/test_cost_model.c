/* workpile/cost_model.h: the dispatch threshold is where the two engines' cost
 * lines cross, and runs move the figures the way the model says. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "workpile/cost_model.h"

TestSuite(cost_model);

Test(cost_model, threshold_is_where_the_costs_cross)
{
    /* CPU 10 us + 1 us/task, GPU 100 us + 0.1 us/task: they cross at 100 tasks */
    tdm_cost_figures f = {1e-6, 1e-5, 1e-7, 1e-4};
    tdm_cost_model m;
    cr_assert_eq(tdm_cost_model_init(&m, &f), 0);
    uint64_t t = tdm_cost_model_threshold(&m);
    cr_assert(t == 100 || t == 101, "threshold %llu, expected 100 or 101", (unsigned long long)t);
    cr_assert_eq(tdm_cost_model_pick_gpu(&m, t - 1), 0);
    cr_assert_eq(tdm_cost_model_pick_gpu(&m, t), 1);
    cr_assert_eq(tdm_cost_model_pick_gpu(&m, 1000000), 1);
    double w;
    tdm_cost_model_get(&m, NULL, &w);
    cr_assert_eq(w, 1.0);
    tdm_cost_model_destroy(&m);
}

Test(cost_model, a_gpu_no_faster_per_task_takes_nothing)
{
    const tdm_cost_figures cases[] = {
        {1e-7, 1e-5, 1e-7, 1e-4}, /* equal per task */
        {1e-7, 1e-5, 2e-7, 1e-6}, /* slower per task, cheaper per run */
        {0, 0, 0, 0},             /* nothing measured yet */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tdm_cost_model m;
        cr_assert_eq(tdm_cost_model_init(&m, &cases[i]), 0);
        cr_assert_eq(tdm_cost_model_threshold(&m), UINT64_MAX, "case %zu", i);
        cr_assert_eq(tdm_cost_model_pick_gpu(&m, UINT64_MAX - 1), 0, "case %zu", i);
        tdm_cost_model_destroy(&m);
    }
}

Test(cost_model, a_gpu_cheaper_per_run_takes_everything)
{
    tdm_cost_figures f = {1e-6, 1e-4, 1e-7, 1e-5};
    tdm_cost_model m;
    cr_assert_eq(tdm_cost_model_init(&m, &f), 0);
    cr_assert_eq(tdm_cost_model_threshold(&m), 1);
    cr_assert_eq(tdm_cost_model_pick_gpu(&m, 1), 1);
    tdm_cost_model_destroy(&m);
}

Test(cost_model, large_runs_learn_the_work_factor)
{
    tdm_cost_figures f = {1e-6, 1e-5, 1e-7, 1e-4};
    tdm_cost_model m;
    cr_assert_eq(tdm_cost_model_init(&m, &f), 0);
    uint64_t t0 = tdm_cost_model_threshold(&m);
    /* every CPU run of 100 000 tasks takes three times the reference's time */
    for (int i = 0; i < 60; i++) tdm_cost_model_learn(&m, 0, 100000, 1e-5 + 3 * 100000 * 1e-6);
    double w;
    tdm_cost_figures g;
    tdm_cost_model_get(&m, &g, &w);
    cr_assert(fabs(w - 3) < 0.01, "w = %g, expected 3", w);
    cr_assert_eq(g.c_off, f.c_off, "large runs leave the fixed cost alone");
    /* heavier work: the GPU's fixed cost is paid back sooner, by a third as many tasks */
    uint64_t t1 = tdm_cost_model_threshold(&m);
    cr_assert(t1 >= t0 / 3 - 1 && t1 <= t0 / 3 + 2, "threshold %llu after w = 3, %llu before", (unsigned long long)t1,
              (unsigned long long)t0);
    /* absurd observations are clamped: w stays finite and positive */
    for (int i = 0; i < 200; i++) tdm_cost_model_learn(&m, 1, 1u << 20, 1e9);
    tdm_cost_model_get(&m, NULL, &w);
    cr_assert(w <= 1e6 && w > 1e5, "w = %g after huge runs", w);
    for (int i = 0; i < 400; i++) tdm_cost_model_learn(&m, 1, 1u << 20, 0);
    tdm_cost_model_get(&m, NULL, &w);
    cr_assert(w >= 1e-3 && w < 2e-3, "w = %g after instant runs", w);
    tdm_cost_model_destroy(&m);
}

Test(cost_model, small_runs_learn_the_fixed_cost)
{
    tdm_cost_figures f = {1e-6, 1e-5, 1e-7, 1e-4};
    tdm_cost_model m;
    cr_assert_eq(tdm_cost_model_init(&m, &f), 0);
    uint64_t t0 = tdm_cost_model_threshold(&m);
    /* small GPU runs (below TDM_COST_SMALL_GPU tasks) cost 500 us each: deeper trees */
    for (int i = 0; i < 80; i++) tdm_cost_model_learn(&m, 1, 10, 5e-4 + 10 * 1e-7);
    tdm_cost_figures g;
    double w;
    tdm_cost_model_get(&m, &g, &w);
    cr_assert(fabs(g.g_off - 5e-4) < 1e-6, "g_off = %g, expected 5e-4", g.g_off);
    cr_assert_eq(w, 1.0, "small runs leave the work factor alone");
    cr_assert_eq(g.c_gpu, f.c_gpu);
    uint64_t t1 = tdm_cost_model_threshold(&m);
    /* (5e-4 - 1e-5) / 9e-7 = 544.4 */
    cr_assert(t1 >= 544 && t1 <= 546, "threshold %llu (was %llu)", (unsigned long long)t1, (unsigned long long)t0);
    /* small CPU runs that cost less than modelled bring c_off down, never below 0 */
    for (int i = 0; i < 80; i++) tdm_cost_model_learn(&m, 0, 1, 0);
    tdm_cost_model_get(&m, &g, NULL);
    cr_assert(g.c_off >= 0 && g.c_off < 1e-9, "c_off = %g", g.c_off);
    tdm_cost_model_destroy(&m);
}

Test(cost_model, builtin_figures_send_large_runs_to_the_gpu)
{
    tdm_cost_figures f = tdm_cost_figures_builtin();
    tdm_cost_model m;
    cr_assert_eq(tdm_cost_model_init(&m, &f), 0);
    uint64_t t = tdm_cost_model_threshold(&m);
    cr_assert(t > 1 && t < 100000, "threshold %llu", (unsigned long long)t);
    tdm_cost_model_destroy(&m);
}

/* Under load the CPU engine keeps only the runs its caller finishes alone within the solo
 * time; past it the GPU takes them even below the threshold, and a GPU no faster per task
 * still takes nothing. */
Test(cost_model, under_load_the_cpu_engine_keeps_only_runs_done_alone)
{
    /* CPU 10 us + 1 us/task with 8 threads (8 us/task alone), GPU 1 ms + 0.1 us/task: they cross
       at ~1 100 tasks */
    tdm_cost_figures f = {1e-6, 1e-5, 1e-7, 1e-3};
    tdm_cost_model m;
    cr_assert_eq(tdm_cost_model_init(&m, &f), 0);
    uint64_t t = tdm_cost_model_threshold(&m);
    cr_assert(t >= 1000 && t <= 1200, "threshold %llu", (unsigned long long)t);
    double solo = 30e-6; /* 3 tasks of 8 us alone fit, 4 do not */
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 3, 8, solo), 0);
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 4, 8, solo), 1);
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 500, 8, solo), 1);
    cr_assert_eq(tdm_cost_model_pick_gpu(&m, 500), 0, "unloaded, the plain model keeps it");
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, t, 8, solo), 1);
    /* one thread: a task is 1 us alone, so 30 fit */
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 30, 1, solo), 0);
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 31, 1, solo), 1);
    /* heavier work (w = 2 after a large CPU run twice as slow as the figures) halves what fits */
    for (int i = 0; i < 40; i++) tdm_cost_model_learn(&m, 0, 100000, 1e-5 + 100000 * 2e-6);
    double w;
    tdm_cost_model_get(&m, NULL, &w);
    cr_assert(fabs(w - 2) < 0.01, "w %g", w);
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 1, 8, solo), 0);
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 2, 8, solo), 1);
    tdm_cost_model_destroy(&m);
    tdm_cost_figures slow = {1e-7, 1e-5, 2e-7, 1e-6};
    cr_assert_eq(tdm_cost_model_init(&m, &slow), 0);
    cr_assert_eq(tdm_cost_model_pick_gpu_loaded(&m, 1000000, 8, solo), 0);
    tdm_cost_model_destroy(&m);
}
