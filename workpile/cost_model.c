/* The dispatch cost model (cost_model.h). */
#include "cost_model.h"

#include "../geom/base.h"

tdm_cost_figures tdm_cost_figures_builtin(void)
{
    tdm_cost_figures f = {5.5e-7, 2e-5, 4.8e-8, 1.1e-4};
    return f;
}

/* lock held (or not shared yet): the size where the two costs cross. */
static void set_threshold(tdm_cost_model *m)
{
    const tdm_cost_figures *f = &m->f;
    if (!(f->c_gpu < f->c_cpu)) { /* a GPU no faster per task than the CPU engine takes nothing */
        m->threshold = UINT64_MAX;
        return;
    }
    double off = f->g_off > f->c_off ? f->g_off - f->c_off : 0;
    double n = off / (m->w * (f->c_cpu - f->c_gpu));
    m->threshold = n < 1 ? 1 : n > 1e12 ? (uint64_t)1e12 : (uint64_t)n + 1;
}

int tdm_cost_model_init(tdm_cost_model *m, const tdm_cost_figures *f)
{
    if (pthread_mutex_init(&m->lock, NULL) != 0) return TDM_ESYS;
    m->f = *f;
    m->w = 1;
    set_threshold(m);
    return TDM_OK;
}

void tdm_cost_model_destroy(tdm_cost_model *m) { pthread_mutex_destroy(&m->lock); }

int tdm_cost_model_pick_gpu(tdm_cost_model *m, uint64_t n)
{
    pthread_mutex_lock(&m->lock);
    int gpu = n >= m->threshold;
    pthread_mutex_unlock(&m->lock);
    return gpu;
}

int tdm_cost_model_pick_gpu_loaded(tdm_cost_model *m, uint64_t n, int threads, double solo_s)
{
    pthread_mutex_lock(&m->lock);
    int gpu = n >= m->threshold || (m->threshold != UINT64_MAX && /* a GPU no faster per task takes nothing */
                                    (double)n * m->w * m->f.c_cpu * (threads > 1 ? threads : 1) > solo_s);
    pthread_mutex_unlock(&m->lock);
    return gpu;
}

void tdm_cost_model_learn(tdm_cost_model *m, int on_gpu, uint64_t n, double seconds)
{
    pthread_mutex_lock(&m->lock);
    double per = on_gpu ? m->f.c_gpu : m->f.c_cpu, *off = on_gpu ? &m->f.g_off : &m->f.c_off;
    if (n < (on_gpu ? TDM_COST_SMALL_GPU : TDM_COST_SMALL_CPU)) {
        double obs = seconds - (double)n * m->w * per;
        *off = 0.8 * *off + 0.2 * (obs > 0 ? obs : 0);
    } else {
        double w_obs = (seconds > *off ? seconds - *off : 0) / ((double)n * per);
        if (w_obs < 1e-3) w_obs = 1e-3;
        if (w_obs > 1e6) w_obs = 1e6;
        m->w = 0.75 * m->w + 0.25 * w_obs;
    }
    set_threshold(m);
    pthread_mutex_unlock(&m->lock);
}

uint64_t tdm_cost_model_threshold(tdm_cost_model *m)
{
    pthread_mutex_lock(&m->lock);
    uint64_t t = m->threshold;
    pthread_mutex_unlock(&m->lock);
    return t;
}

void tdm_cost_model_get(tdm_cost_model *m, tdm_cost_figures *f, double *w)
{
    pthread_mutex_lock(&m->lock);
    if (f) *f = m->f;
    if (w) *w = m->w;
    pthread_mutex_unlock(&m->lock);
}
