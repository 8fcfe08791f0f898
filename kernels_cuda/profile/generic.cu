// Generic (float) Viterbi and Forward of HMMER3 profiles (kernels_common/profile/generic.h) in
// CUDA's spelling: a block per sequence, the scans across it on warp shuffles. Defines: MODEL_M,
// THREADS, FORWARD (see generic.h).
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
#define GN_FABS(x) fabsf(x)
#define GN_LOG1P_EXP(d) log1pf(__expf(d))
#define GN_SHUFFLE 1
#define GN_SHFL_UP(v, n) __shfl_up_sync(0xffffffffu, (v), (n))
#define GN_SHFL_XOR(v, n) __shfl_xor_sync(0xffffffffu, (v), (n))
typedef uint8_t u8;
typedef long long i64;

#include "profile/generic.h"
