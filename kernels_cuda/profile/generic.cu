// Generic (float) Viterbi and Forward of HMMER3 profiles (kernels_common/profile/generic.h) in
// CUDA's spelling: a block per sequence, the row's scan across it on warp shuffles (one barrier
// per row; none with THREADS 32). Defines: MODEL_M, THREADS, FORWARD (see generic.h).
#include <math.h>
#include <stdint.h>

#define GN_KERNEL(name) extern "C" __global__ void __launch_bounds__(THREADS) name
#define GN_FN __device__ __forceinline__
#define IN(T) const T *__restrict__
#define OUT(T) T *
#define SHARED __shared__
#define SHARED_PTR(T) T *
#define LOCAL_ID ((int)threadIdx.x)
#define GROUP_ID ((int)blockIdx.x)
#define BARRIER __syncthreads()
#define GN_NEG_INF (-INFINITY)
#define GN_MAX(a, b) fmaxf(a, b)
#define GN_EXP(x) expf(x)
#define GN_LOG(x) logf(x)
#define GN_ILOGB(x) ilogbf(x)
#define GN_LDEXP(x, e) ldexpf(x, e)
#define GN_SHUFFLE 1
#define GN_SHFL_UP(v, n) __shfl_up_sync(0xffffffffu, (v), (n))
#define GN_SHFL_IDX(v, lane) __shfl_sync(0xffffffffu, (v), (lane))
typedef uint8_t u8;
typedef long long i64;

#include "profile/generic.h"
