/* HMMER3 SIMD-filter arithmetic (SSV, MSV, Viterbi filter), one work-item per target sequence:
 * the task-parallel kernels shared with CUDA (kernels_common/profile/task.h), in OpenCL's
 * spelling. Defines: MODEL_M, INTERLEAVED (see the header). */
#define TASK_KERNEL(name) __kernel void name
#define IN(T) __global const T *
#define OUT(T) __global T *
#define GLOBAL_ID ((int)get_global_id(0))
typedef uchar u8;
typedef short i16;
typedef long i64;

#include "profile/task.h"
