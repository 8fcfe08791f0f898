/* Generic (float) Viterbi and Forward of HMMER3 profiles (kernels_common/profile/generic.h) in
 * OpenCL's spelling: a work-group per sequence, the row's scan across it in local memory, or
 * with SUBGROUP (lanes, a power of two) on sub-group shuffles as CUDA's warps do (the kernel
 * asks for sub-groups of that size: cl_intel_required_subgroup_size; the caller checks the
 * device has them). Defines: MODEL_M, THREADS, FORWARD (see generic.h), SUBGROUP. */
#define GN_FN inline
#define IN(T) __global const T *
#define OUT(T) __global T *
#define SHARED __local
#define SHARED_PTR(T) __local T *
#define LOCAL_ID ((int)get_local_id(0))
#define GROUP_ID ((int)get_group_id(0))
#define BARRIER barrier(CLK_LOCAL_MEM_FENCE)
#define GN_NEG_INF (-INFINITY)
#define GN_MAX(a, b) fmax(a, b)
#define GN_EXP(x) exp(x)
#define GN_LOG(x) log(x)
#define GN_ILOGB(x) ilogb(x)
#define GN_LDEXP(x, e) ldexp(x, e)
typedef uchar u8;
typedef long i64;

#if defined(SUBGROUP) && SUBGROUP
#ifdef cl_khr_subgroups
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#define GN_KERNEL(name) __kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) \
    __attribute__((intel_reqd_sub_group_size(SUBGROUP))) void name
#define GN_SHUFFLE 1
#define GN_WARP SUBGROUP
#define GN_SHFL_UP(v, n) sub_group_shuffle((v), (uint)max((int)get_sub_group_local_id() - (n), 0))
#define GN_SHFL_IDX(v, lane) sub_group_shuffle((v), (uint)(lane))
#else
#define GN_KERNEL(name) __kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void name
#define GN_SHUFFLE 0
#endif

#include "profile/generic.h"
