/* The pipeline's stage decisions and survivor compaction (kernels_common/profile/stages.h) and
 * the scores finished on the device (finish.h) in OpenCL's spelling. Defines: GROUP_SIZE, ITEMS
 * (see stages.h). */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define STAGE_KERNEL(name) __kernel void name
#define IN(T) __global const T *
#define OUT(T) __global T *
#define LOCAL_ID ((int)get_local_id(0))
#define GROUP_ID ((int)get_group_id(0))
#define GLOBAL_ID ((int)get_global_id(0))
#define BARRIER barrier(CLK_LOCAL_MEM_FENCE)
#define SHARED __local
#define SCORE_INF INFINITY
#define SCORE_NAN as_float(0x7fc00000)
typedef uchar u8;

#include "profile/stages.h"
#include "profile/finish.h"
