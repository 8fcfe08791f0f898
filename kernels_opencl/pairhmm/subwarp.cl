/* Sub-warp Pair-HMM forward kernel, OpenCL's spelling of kernels_common/pairhmm/subwarp.h (the
 * recurrence and its header comment live there, shared with kernels_cuda/pairhmm/subwarp.cu).
 *
 * Defines: the SW_* configuration (pairhmm/subwarp_defs.h) and EXCHANGE, how a group of SW_P
 * work-items hands its last row to the next work-item (values as in wavefront.cl):
 *   EXCHANGE_PTX          inline PTX shfl.sync.up under the group's lane mask (NVIDIA's OpenCL:
 *                         groups of a warp run independently, as in CUDA)
 *   EXCHANGE_KHR / _INTEL / _KHR_INDEXED   sub-group shuffles; the group is exactly one sub-group
 *                         (the host checks the compiled sub-group size: SW_P lanes)
 *   EXCHANGE_LOCAL        local memory, one work-group barrier per step; one group per work-group
 *                         (SW_BLOCK = SW_P), so every barrier is reached by the whole work-group
 * Results, SW_DEVICE_RESCUE=1 (devices with fp64), as the CUDA twin: log10 of each pair's
 * likelihood in double, the float32 sums under the 1e-28 rule queued on the device (fb_queue:
 * {first slot, count} of the recompute queue this bin feeds, fb_items its items) for the float64
 * recompute, a SW_DOUBLE=1 build over that queue. SW_DEVICE_RESCUE=0: the raw float sum (with C)
 * of each pair, the host applies the rule and recomputes the pairs below it; with SW_EXP_SCALE
 * (sub-group paths only): log10 of the sum without C, NaN for the pairs the host recomputes.
 */
#define EXCHANGE_LOCAL 0
#define EXCHANGE_KHR 1
#define EXCHANGE_INTEL 2
#define EXCHANGE_PTX 3
#define EXCHANGE_KHR_INDEXED 4

#ifndef SW_DEVICE_RESCUE
#define SW_DEVICE_RESCUE 0
#endif
#if SW_DOUBLE || SW_DEVICE_RESCUE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define SW_FN static inline __attribute__((always_inline))  /* as CUDA's __forceinline__ */
#define SW_IN(T) __global const T* restrict
#define SW_OUT(T) __global T* restrict
#define SW_GLOBAL __global
#define SW_TABLE_MEM __local
#define SW_TABLE_DECL(name) __local RealQuad name[SW_GROUPS * SW_GROUP_STRIDE]
#define SW_ALIGNED(n) __attribute__((aligned(n)))
#define SW_I64 long
#define SW_LOCAL_ID ((int)get_local_id(0))
#define SW_GROUP_ID ((int)get_group_id(0))
#define SW_NUM_GROUPS ((int)get_num_groups(0))
#if defined(__has_builtin)
#if __has_builtin(__builtin_assume)
#define SW_ASSUME(cond) __builtin_assume(cond)
#endif
#endif
#ifndef SW_ASSUME
#define SW_ASSUME(cond)
#endif
#define SW_EXP10F(x) exp10(x)
#define SW_EXP10D(x) exp10(x)
/* No sub-buffers (NVIDIA's runtime crashed releasing them): the staged arrays come as one buffer
 * and each array's byte offset in it (256-byte aligned), the bin's {first, count} as its buffer
 * and an int offset, and so the results and the recompute queue's head (one buffer, heads in
 * front); the prologue names them as the shared body's default parameters. */
#define SW_KERNEL_PARAMS                                                                    \
    SW_IN(SwItem) items, __global const int* ranges, int range_at, int n_max,               \
    __global const uchar* restrict slot, long read_bases_at, long base_q_at, long ins_q_at, \
    long del_q_at, long gcp_q_at, long read_off_at, long hap_bases_at, long hap_off_at,     \
    SW_RESULT_PARAMS, SW_OUT(RealQuad) scratch, int scratch_stride
#define SW_ARRAYS_DECL                                                                      \
    __global const int* const range = ranges + range_at;                                   \
    SW_IN(unsigned char) const read_bases = slot + read_bases_at;                            \
    SW_IN(unsigned char) const base_q = slot + base_q_at;                                    \
    SW_IN(unsigned char) const ins_q = slot + ins_q_at;                                      \
    SW_IN(unsigned char) const del_q = slot + del_q_at;                                      \
    SW_IN(unsigned char) const gcp_q = slot + gcp_q_at;                                      \
    SW_IN(SW_I64) const read_off = (__global const SW_I64*)(slot + read_off_at);             \
    SW_IN(unsigned char) const hap_bases = slot + hap_bases_at;                              \
    SW_IN(SW_I64) const hap_off = (__global const SW_I64*)(slot + hap_off_at);
#if SW_DEVICE_RESCUE
#define SW_RESULT_PARAMS                                                                    \
    __global double* results, int out_at, __global int* heads, int fb_at,                   \
    __global SwItem* restrict fb_items
#define SW_RESULT_DECL                                                                      \
    __global double* const out = results + out_at;                                          \
    __global int* const fb_queue = heads + fb_at;
#if SW_DOUBLE
#define SW_STORE(o, sum) (out[(o)] = log10(sum) - SW_LOG10_C)
#else
/* Below the floor (SW_KEEPS): queued for the recompute, the queue sized by the layout for every
 * pair of the bins feeding it. */
#define SW_STORE(o, sum)                                                          \
    do {                                                                          \
        const int o_ = (o);                                                       \
        if (SW_KEEPS(sum)) {                                                      \
            out[o_] = log10((double)(sum)) - SW_LOG10_C;                          \
        } else {                                                                  \
            const int slot_ = atomic_inc(fb_queue + 1);                           \
            SwItem f_;                                                            \
            f_.read = item.read; f_.hap = item.hap + h; f_.n_hap = 1; f_.out = o_; \
            fb_items[fb_queue[0] + slot_] = f_;                                   \
        }                                                                         \
    } while (0)
#endif
#else
#define SW_RESULT_PARAMS SW_OUT(real_t) out
#define SW_RESULT_DECL
#define SW_STORE(o, sum) (out[(o)] = (sum))
#endif

#if EXCHANGE == EXCHANGE_PTX
/* __shfl_up_sync(mask, x, 1, SW_P): c = (32 - width) << 8 keeps the shuffle inside the group */
#define SW_SHFL_C ((32 - SW_P) << 8)
static inline uint sw_shfl_up_u32(uint x, uint mask)
{
    uint r;
    asm volatile("shfl.sync.up.b32 %0, %1, 1, %2, %3;" : "=r"(r) : "r"(x), "r"(SW_SHFL_C), "r"(mask));
    return r;
}
static inline float sw_shfl_up(float x, uint mask) { return as_float(sw_shfl_up_u32(as_uint(x), mask)); }
static inline int sw_shfl_up_int(int x, uint mask) { return (int)sw_shfl_up_u32((uint)x, mask); }
#if SW_DOUBLE
static inline double sw_shfl_up_f64(double x, uint mask)
{
    const uint2 h = as_uint2(x);
    return as_double((uint2)(sw_shfl_up_u32(h.x, mask), sw_shfl_up_u32(h.y, mask)));
}
#define SW_SHFL_REAL(x) sw_shfl_up_f64((x), group_mask)
#else
#define SW_SHFL_REAL(x) sw_shfl_up((x), group_mask)
#endif
#define SW_SHFL_INT(x) sw_shfl_up_int((x), group_mask)
#define SW_GROUP_SYNC() asm volatile("bar.warp.sync %0;" :: "r"(group_mask) : "memory")
#define SW_REQD_SUBGROUP 0

#elif EXCHANGE == EXCHANGE_KHR || EXCHANGE == EXCHANGE_INTEL || EXCHANGE == EXCHANGE_KHR_INDEXED
#ifdef cl_khr_subgroups
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if EXCHANGE == EXCHANGE_KHR
#define SW_SHFL_REAL(x) sub_group_shuffle_up((x), 1u)
#elif EXCHANGE == EXCHANGE_INTEL
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#define SW_SHFL_REAL(x) intel_sub_group_shuffle_up((x), (x), 1u)
#else
/* cl_khr_subgroup_shuffle only: lane 0's value is replaced by the boundary row anyway */
#define SW_SHFL_REAL(x) sub_group_shuffle((x), (uint)max((int)get_sub_group_local_id() - 1, 0))
#endif
#define SW_SHFL_INT(x) SW_SHFL_REAL(x)
#define SW_GROUP_SYNC() sub_group_barrier(CLK_LOCAL_MEM_FENCE)
#define SW_REQD_SUBGROUP 1

#else /* EXCHANGE_LOCAL */
#if SW_BLOCK != SW_P
#error "the local-memory exchange synchronizes the whole work-group: one group per work-group"
#endif
#define SW_GROUP_SYNC() barrier(CLK_LOCAL_MEM_FENCE)
#define SW_REQD_SUBGROUP 0
#endif

#if EXCHANGE == EXCHANGE_LOCAL
/* Double-buffered by step parity: one barrier per step (a buffer is rewritten two steps later,
 * after every reader has passed the barrier in between). */
#define SW_EXCHANGE_DECL __local real_t sw_xchg[2][3][SW_BLOCK]; __local int sw_xcode[2][SW_BLOCK];
#define SW_SHIFT_UP(ux, ui, ud, c, x, i, d)                                   \
    do {                                                                      \
        const int b_ = step & 1, t_ = SW_LOCAL_ID;                            \
        sw_xchg[b_][0][t_] = (x); sw_xchg[b_][1][t_] = (i);                   \
        sw_xchg[b_][2][t_] = (d); sw_xcode[b_][t_] = (c);                     \
        barrier(CLK_LOCAL_MEM_FENCE);                                         \
        if (lane > 0) {                                                       \
            ux = sw_xchg[b_][0][t_ - 1]; ui = sw_xchg[b_][1][t_ - 1];         \
            ud = sw_xchg[b_][2][t_ - 1]; c = sw_xcode[b_][t_ - 1];            \
        }                                                                     \
    } while (0)
#else
#define SW_EXCHANGE_DECL
#define SW_SHIFT_UP(ux, ui, ud, c, x, i, d)                                   \
    do {                                                                      \
        ux = SW_SHFL_REAL(x); ui = SW_SHFL_REAL(i); ud = SW_SHFL_REAL(d);     \
        c = SW_SHFL_INT(c);                                                   \
    } while (0)
#endif

#if SW_EXP_SCALE
/* Exponents (kernels_common/pairhmm/subwarp.h): the group is one sub-group; the kernel stores
 * log10 of the pair's forward sum without C (float), or NaN for the float64 recompute. */
#if EXCHANGE != EXCHANGE_KHR && EXCHANGE != EXCHANGE_INTEL && EXCHANGE != EXCHANGE_KHR_INDEXED
#error "exponents (SW_EXP_SCALE) need a sub-group exchange path"
#endif
#pragma OPENCL EXTENSION cl_khr_subgroup_ballot : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#define SW_SUB_LANE ((int)get_sub_group_local_id())
/* Every lane takes part in the shuffle (sub-group functions need the whole sub-group); lanes
 * under n keep their own value, as CUDA's __shfl_up_sync gives it. */
inline int __attribute__((overloadable)) sw_keep_below(int n, int shuffled, int own)
{
    return SW_SUB_LANE >= n ? shuffled : own;
}
inline float __attribute__((overloadable)) sw_keep_below(int n, float shuffled, float own)
{
    return SW_SUB_LANE >= n ? shuffled : own;
}
#define SW_SHFL_UP_BY(v, n) \
    sw_keep_below((n), sub_group_shuffle((v), (uint)max(SW_SUB_LANE - (n), 0)), (v))
#define SW_SHFL_FROM(v, src) sub_group_shuffle((v), (uint)(src))
#define SW_GROUP_BALLOT(pred) (sub_group_ballot((int)(pred)).x)
#define SW_GROUP_ANY(pred) sub_group_any((int)(pred))
#define SW_CLZ(x) ((int)clz((uint)(x)))
#define SW_FLOAT_BITS(x) as_int(x)
#define SW_BITS_FLOAT(i) as_float(i)
#define SW_STORE_SCALED(o, sum, e, bad)                                                 \
    (out[(o)] = ((bad) || !((sum) > 0.0f) || isinf(sum))                                \
        ? NAN : log10(sum) - (float)(e) * 0.30102999566f)
#endif

/* Lane 0's shuffled values are undefined on cl_khr_subgroup_shuffle's shuffle_up (no factor 0 on
 * them: undefined times 0 may be NaN), so it keeps the selects. */
#ifndef SW_LANE0_BY_FACTOR
#define SW_LANE0_BY_FACTOR 0
#endif

/* Intel's compilers pick a sub-group size per kernel; a group must be exactly one sub-group. */
#if SW_REQD_SUBGROUP && defined(cl_intel_required_subgroup_size)
#define SW_SUBGROUP_ATTR __attribute__((intel_reqd_sub_group_size(SW_P)))
#else
#define SW_SUBGROUP_ATTR
#endif
#define SW_KERNEL_PROLOGUE SW_EXCHANGE_DECL SW_ARRAYS_DECL SW_RESULT_DECL
#define SW_KERNEL(name) \
    __kernel SW_SUBGROUP_ATTR __attribute__((reqd_work_group_size(SW_BLOCK, 1, 1))) void name

#if SW_SUBGROUP_PROBE
/* The sub-group probe (opencl.py, SubwarpOpenCL.path) where the required sub-group size applies:
 * the kernel head and the exchange's shuffle without the body. The attribute makes the compiled
 * size SW_P or fails the build, whatever the body (cl_intel_required_subgroup_size). */
SW_KERNEL(subwarp_forward)(__global float* out) {
    out[get_global_id(0)] = SW_SHFL_REAL((float)get_sub_group_local_id());
}
#else
#include "pairhmm/subwarp.h"
#endif
