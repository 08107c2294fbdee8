/* The engine interface's shared pieces (backend.h). */
#include "backend.h"

#include <string.h>

static int copy_array(const tdm_task_list *l, size_t lo, size_t hi, tdm_task *out)
{
    memcpy(out, l->array + lo, (hi - lo) * sizeof *out);
    return 0;
}

tdm_task_list tdm_task_list_array(const tdm_task *tasks, size_t n)
{
    tdm_task_list l = {n, copy_array, NULL, tasks, NULL, 0};
    return l;
}
