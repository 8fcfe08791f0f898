// HMMER3 SIMD filters on CUDA: SSV, MSV (8-bit) and the Viterbi filter (16-bit, lazy F).
//
// Two families, both exact integer emulations of HMMER 3.4 (the host finishes the raw integers
// into nats with the reference's rules, cpu_reference/profile_filters.py):
//  * task-parallel (*_task): one thread per target sequence, unstriped rows in global memory
//    ([k][seq] interleaved, so a warp's accesses coalesce), the kernels of
//    kernels_common/profile/task.h, shared with OpenCL;
//  * CUDAMPF-style warp kernels (*_warp): a group of lanes per sequence, the model Farrar-striped
//    over the group, the DP row in registers (QB / QW vectors, fixed per model size at compile
//    time), SIMD-within-a-register arithmetic, warp shuffles for the one-element shift between
//    vectors, warp reductions for xE, and HMMER's lazy-F D->D passes: the kernels of
//    kernels_common/profile/warp.h (read its header comment), shared with OpenCL, here with
//    CUDA's intrinsics (Hopper DPX for the int16 variants).
//
// Defines: MODEL_M (model length), QB = max(2, ceil(M/128)), QW = max(2, ceil(M/64)),
// BLOCK (threads per block, a multiple of 32).
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 128
#endif
#define FULL 0xffffffffu
#define NEG16 (-32768)

// ------------------------------------------------------------------ task-parallel kernels
// Shared with OpenCL (kernels_common/profile/task.h), in CUDA's spelling; rows [k][seq].
#define TASK_KERNEL(name) extern "C" __global__ void __launch_bounds__(BLOCK) name##_task
#define IN(T) const T *__restrict__
#define OUT(T) T *
#define GLOBAL_ID ((int)(blockIdx.x * blockDim.x + threadIdx.x))
typedef uint8_t u8;
typedef int16_t i16;
typedef long long i64;
#define INTERLEAVED 1
#include "profile/task.h"

// ------------------------------------------------------------------ warp-group kernels
// kernels_common/profile/warp.h in CUDA's spelling. PROFILE_SMEM (CUDA only): the profile
// copied once per persistent block into shared memory (else __ldg).
#ifndef PROFILE_SMEM
#define PROFILE_SMEM 0
#endif
#if PROFILE_SMEM
extern __shared__ uint32_t smem_profile[];
#define PROFILE_BEGIN(g, nwords)                                                      \
    for (int i_ = threadIdx.x; i_ < (nwords); i_ += BLOCK) smem_profile[i_] = (g)[i_]; \
    __syncthreads();                                                                  \
    const uint32_t *P = smem_profile;
#define PLOAD(p) (*(p))
#define PLOAD2(p) (*(const uint2 *)(p))
#define W_PROFILE const uint32_t *
#else
#define PROFILE_BEGIN(g, nwords) const uint32_t *__restrict__ P = (g);
#define PLOAD(p) __ldg(p)
#define PLOAD2(p) __ldg((const uint2 *)(p))
#define W_PROFILE const uint32_t *__restrict__
#endif
typedef uint32_t u32;
#define W_FN __device__ __forceinline__
#define W_KERNEL(name) extern "C" __global__ void __launch_bounds__(BLOCK) name
#define W_IN(T) const T *__restrict__
#define W_OUT(T) T *
#define W_LOCAL_ID threadIdx.x
#define W_GROUP_ID blockIdx.x
#define W_NUM_GROUPS gridDim.x
#define W_KERNEL_PROLOGUE
#define W_SHFL_UP_G(x) __shfl_up_sync(FULL, (x), 1, GROUP)
#define W_SHFL_UP32(x) __shfl_up_sync(FULL, (x), 1)
#define W_SHFL_IDX(x, r, w) __shfl_sync(FULL, (x), (r), (w))
#define W_SHFL_XOR_G(x, d) __shfl_xor_sync(FULL, (x), (d), GROUP)
#define W_REDUCE_MAX(x) __reduce_max_sync(FULL, (x))
#define W_ANY(p) __any_sync(FULL, (p))
#define vu4_max __vmaxu4
#define vu4_addus __vaddus4
#define vu4_subus __vsubus4
#define vs2_max __vmaxs2
#define vs2_min __vmins2
#define vs2_add __vadd2
#define vs2_addss __vaddss2
#define vs2_addmax __viaddmax_s16x2
#define vs2_addmin_relu __viaddmin_s16x2_relu
#define vs2_max3 __vimax3_s16x2
#include "profile/warp.h"
