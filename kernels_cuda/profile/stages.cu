// The pipeline's stage decisions and survivor compaction (kernels_common/profile/stages.h) and
// the scores finished on the device (finish.h) in CUDA's spelling. Defines: GROUP_SIZE, ITEMS
// (see stages.h).
#include <math.h>
#include <stdint.h>

#define STAGE_KERNEL(name) extern "C" __global__ void __launch_bounds__(GROUP_SIZE) name
#define IN(T) const T *__restrict__
#define OUT(T) T *
#define LOCAL_ID ((int)threadIdx.x)
#define GROUP_ID ((int)blockIdx.x)
#define GLOBAL_ID ((int)(blockIdx.x * blockDim.x + threadIdx.x))
#define BARRIER __syncthreads()
#define SHARED __shared__
#define SCORE_INF INFINITY
#define SCORE_NAN __int_as_float(0x7fc00000)
typedef uint8_t u8;
#define SCORE_FN static __device__ __forceinline__

#include "profile/stages.h"
#include "profile/finish.h"
