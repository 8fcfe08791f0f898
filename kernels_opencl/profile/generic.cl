/* Generic (float) Viterbi and Forward of HMMER3 profiles (kernels_common/profile/generic.h) in
 * OpenCL's spelling: a work-group per sequence, the scans across it in local memory. Defines:
 * MODEL_M, THREADS, FORWARD (see generic.h). */
#define GN_KERNEL(name) __kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void name
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
#define GN_FABS(x) fabs(x)
#define GN_LOG1P_EXP(d) log1p(exp(d))
#define GN_SHUFFLE 0
typedef uchar u8;
typedef long i64;

#include "profile/generic.h"
