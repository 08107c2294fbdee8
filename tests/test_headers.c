/* The public client header and the scheduler's headers in one translation unit:
 * a program may use libtandem and link the engine in-process, so no name may be
 * defined by both. The enums they share in meaning must agree in value, since
 * tandemd reports its engine with the scheduler's kind (daemon/stats.c). */
#include <criterion/criterion.h>

#include "client/tandem.h"
#include "workpile/scene.h"
#include "workpile/sched.h"

TestSuite(headers);

Test(headers, engine_kinds_agree)
{
    cr_assert_eq((int)TDM_BACKEND_CPU, (int)TDM_ENGINE_CPU);
    cr_assert_eq((int)TDM_BACKEND_GPU, (int)TDM_ENGINE_GPU);
    cr_assert_eq((int)TDM_BACKEND_HYBRID, (int)TDM_ENGINE_HYBRID);
    cr_assert_str_eq(tdm_engine_name(TDM_ENGINE_GPU), tdm_backend_name(TDM_BACKEND_GPU));
    cr_assert_str_eq(tdm_engine_name(TDM_ENGINE_HYBRID), tdm_backend_name(TDM_BACKEND_HYBRID));
}

Test(headers, names_parse_back)
{
    tdm_backend_kind k;
    cr_assert_eq(tdm_backend_parse("hybrid", &k), TDM_OK);
    cr_assert_eq(k, TDM_BACKEND_HYBRID);
    cr_assert_eq(tdm_backend_parse("fpga", &k), TDM_EINVAL);
    tdm_traversal t;
    cr_assert_eq(tdm_traversal_parse("wide", &t), TDM_OK);
    cr_assert_eq(t, TDM_TRAVERSAL_WIDE);
    cr_assert_eq(tdm_traversal_parse("", &t), TDM_EINVAL);
}
