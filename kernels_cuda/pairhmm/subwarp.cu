// Sub-warp Pair-HMM forward kernel, CUDA's spelling of kernels_common/pairhmm/subwarp.h (the
// recurrence and its header comment live there, shared with kernels_opencl/pairhmm/subwarp.cl).
// Groups of SW_P lanes exchange with __shfl_up_sync under their group mask; the emission table is
// dynamic shared memory (the host sizes it); results are log10 written in place, float32
// underflows queued on the device for the double-precision recompute.
#define SW_FN __device__ __forceinline__
#ifdef SW_MAXNREG
// A cap below what the min blocks allow: with fewer registers to spare ptxas keeps a row's values
// in place across the unrolled steps instead of moving them back at the loop's end (the p32k28
// loop: 69 MOVs at 254 registers, 20 at 224). The two attributes cannot be combined.
#define SW_KERNEL(name) extern "C" __global__ void __maxnreg__(SW_MAXNREG) name
#else
#define SW_KERNEL(name) extern "C" __global__ void __launch_bounds__(SW_BLOCK, SW_MIN_BLOCKS) name
#endif
#define SW_IN(T) const T* __restrict__
#define SW_OUT(T) T* __restrict__
#define SW_GLOBAL
#define SW_TABLE_MEM
#define SW_TABLE_DECL(name) extern __shared__ RealQuad name[]
#define SW_ALIGNED(n) __align__(n)
#define SW_I64 long long
#define SW_LOCAL_ID threadIdx.x
#define SW_GROUP_ID blockIdx.x
#define SW_NUM_GROUPS gridDim.x
#define SW_GROUP_SYNC() __syncwarp(group_mask)
#define SW_SHIFT_UP(ux, ui, ud, c, x, i, d)              \
    do {                                                 \
        ux = __shfl_up_sync(group_mask, (x), 1, SW_P);   \
        ui = __shfl_up_sync(group_mask, (i), 1, SW_P);   \
        ud = __shfl_up_sync(group_mask, (d), 1, SW_P);   \
        c = __shfl_up_sync(group_mask, (c), 1, SW_P);    \
    } while (0)
#define SW_SHFL_UP_BY(v, n) __shfl_up_sync(group_mask, (v), (n), SW_P)
#define SW_SHFL_FROM(v, src) __shfl_sync(group_mask, (v), (src), SW_P)
#define SW_GROUP_BALLOT(pred) (__ballot_sync(group_mask, (pred)) >> (threadIdx.x % 32 / SW_P * SW_P))
#define SW_GROUP_ANY(pred) __any_sync(group_mask, (pred))
#define SW_CLZ(x) __clz((int)(x))
#define SW_FLOAT_BITS(x) __float_as_int(x)
#define SW_BITS_FLOAT(i) __int_as_float(i)
#define SW_ASSUME(cond) __builtin_assume(cond)
#define SW_EXP10F(x) exp10f(x)
#define SW_EXP10D(x) exp10(x)
#define SW_KERNEL_PROLOGUE
#define SW_RESULT_PARAMS \
    double* __restrict__ out, int* __restrict__ fb_queue, SwItem* __restrict__ fb_items

// Queues output slot o (its pair: item.read x haplotype item.hap + h) for the double recompute;
// the queue {first, count} has room for every pair of the bins feeding it (a pair aligned again
// under SW_EXTRA_WORK was queued the first time).
#define SW_QUEUE_RECOMPUTE(o)                                                     \
    if (!SW_REDONE) {                                                             \
        const int slot = atomicAdd(fb_queue + 1, 1);                              \
        SwItem f;                                                                 \
        f.read = item.read; f.hap = item.hap + h; f.n_hap = 1; f.out = o;         \
        fb_items[fb_queue[0] + slot] = f;                                         \
    }

#if SW_DOUBLE
#define SW_STORE(o, sum)                        \
    do {                                        \
        const int o_ = (o);                     \
        out[o_] = log10(sum) - SW_LOG10_C;      \
    } while (0)
#else
// Below the read's floor (SW_KEEPS: 1e-28, or SW_F32_LOW_FLOOR; float32 underflow or worse):
// queued for the recompute.
#define SW_STORE(o, sum)                                                          \
    do {                                                                          \
        const int o_ = (o);                                                       \
        if (SW_KEEPS(sum)) {                                                      \
            out[o_] = log10((double)(sum)) - SW_LOG10_C;                          \
        } else {                                                                  \
            SW_QUEUE_RECOMPUTE(o_)                                                \
        }                                                                         \
    } while (0)
#endif

// Exponents: log10(sum) - e log10(2) - log10 C, or the double recompute for a pair whose
// exponents could not convert (bad) or whose sum came out 0, infinite or NaN.
#define SW_STORE_SCALED(o, sum, e, bad)                                           \
    do {                                                                          \
        const int o_ = (o);                                                       \
        if (!(bad) && (sum) > 0.0f && (sum) <= 3.4028235e38f) {                   \
            out[o_] = log10((double)(sum)) - SW_LOG10_C - (e) * 0.30102999566398120; \
        } else {                                                                  \
            SW_QUEUE_RECOMPUTE(o_)                                                \
        }                                                                         \
    } while (0)

#include "pairhmm/subwarp.h"
