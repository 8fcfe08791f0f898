/* Warp-group HMMER3 filter kernels (profile-opencl-warp): kernels_common/profile/warp.h, shared
 * with CUDA's profile-cuda-warp, in OpenCL's spelling.
 *
 * No DPX: the int16-pair cells (SIMD16, VF_DPX) are written with OpenCL's short2 built-ins
 * (max, min, add, add_sat on the two halves), the byte cells with uchar4 (max, add_sat,
 * sub_sat); what NVIDIA's OpenCL compiler makes of them: scripts/twins_resources.py.
 *
 * Defines: those of warp.h and EXCHANGE, how the 32 lanes of a warp exchange (values as in
 * pairhmm/wavefront.cl):
 *   EXCHANGE_PTX          inline PTX shfl.sync / redux.sync / vote.sync (NVIDIA's OpenCL)
 *   EXCHANGE_KHR / _INTEL / _KHR_INDEXED   sub-group functions; a warp is one sub-group of 32
 *                         (the host checks the compiled size)
 *   EXCHANGE_LOCAL        local memory with barriers; one warp per work-group (BLOCK = 32)
 */
#define EXCHANGE_LOCAL 0
#define EXCHANGE_KHR 1
#define EXCHANGE_INTEL 2
#define EXCHANGE_PTX 3
#define EXCHANGE_KHR_INDEXED 4

typedef uchar u8;
typedef short i16;
typedef long i64;
typedef uint u32;

#define W_FN static inline __attribute__((always_inline))  /* as CUDA's __forceinline__ */
#define W_IN(T) __global const T *restrict
#define W_OUT(T) __global T *
#define W_PROFILE __global const uint *restrict
#define PROFILE_BEGIN(g, nwords) W_PROFILE P = (g);
#define PLOAD(p) (*(p))
#define W_LOCAL_ID ((int)get_local_id(0))
#define W_GROUP_ID ((int)get_group_id(0))
#define W_NUM_GROUPS ((int)get_num_groups(0))

/* ---- element operations on 32-bit words (two int16 / four unsigned bytes) */
W_FN u32 vu4_max(u32 a, u32 b) { return as_uint(max(as_uchar4(a), as_uchar4(b))); }
W_FN u32 vu4_addus(u32 a, u32 b) { return as_uint(add_sat(as_uchar4(a), as_uchar4(b))); }
W_FN u32 vu4_subus(u32 a, u32 b) { return as_uint(sub_sat(as_uchar4(a), as_uchar4(b))); }
W_FN u32 vs2_max(u32 a, u32 b) { return as_uint(max(as_short2(a), as_short2(b))); }
W_FN u32 vs2_min(u32 a, u32 b) { return as_uint(min(as_short2(a), as_short2(b))); }
W_FN u32 vs2_add(u32 a, u32 b) { return as_uint(as_short2(a) + as_short2(b)); }
W_FN u32 vs2_addss(u32 a, u32 b) { return as_uint(add_sat(as_short2(a), as_short2(b))); }
W_FN u32 vs2_addmax(u32 a, u32 b, u32 c)
{ return as_uint(max(as_short2(a) + as_short2(b), as_short2(c))); }
W_FN u32 vs2_addmin_relu(u32 a, u32 b, u32 c)
{ return as_uint(max(min(as_short2(a) + as_short2(b), as_short2(c)), (short2)(0, 0))); }
W_FN u32 vs2_max3(u32 a, u32 b, u32 c)
{ return as_uint(max(max(as_short2(a), as_short2(b)), as_short2(c))); }

/* ---- warp operations */
#if EXCHANGE == EXCHANGE_PTX
/* c = ((32 - width) << 8) | (0x1f for idx/bfly), as __shfl_*_sync(mask, x, ., width) emits */
#define W_C_UP(w) ((32 - (w)) << 8)
#define W_C_IDX(w) (((32 - (w)) << 8) | 0x1f)
static inline uint w_shfl_up(uint x, uint c)
{
    uint r;
    asm volatile("shfl.sync.up.b32 %0, %1, 1, %2, 0xffffffff;" : "=r"(r) : "r"(x), "r"(c));
    return r;
}
static inline uint w_shfl_idx(uint x, int lane, uint c)
{
    uint r;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, 0xffffffff;" : "=r"(r) : "r"(x), "r"(lane), "r"(c));
    return r;
}
static inline uint w_shfl_bfly(uint x, int d, uint c)
{
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, %3, 0xffffffff;" : "=r"(r) : "r"(x), "r"(d), "r"(c));
    return r;
}
static inline int w_reduce_max(int x)
{
    int r;
    asm volatile("redux.sync.max.s32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(x));
    return r;
}
static inline int w_any(int p)
{
    int r;
    asm volatile("{ .reg .pred p1, p2; setp.ne.s32 p1, %1, 0; vote.sync.any.pred p2, p1, 0xffffffff; "
                 "selp.s32 %0, 1, 0, p2; }" : "=r"(r) : "r"(p));
    return r;
}
#define W_SHFL_UP_G(x) w_shfl_up((x), W_C_UP(GROUP))
#define W_SHFL_UP32(x) w_shfl_up((x), W_C_UP(32))
#define W_SHFL_IDX(x, r, w) ((int)w_shfl_idx((uint)(x), (r), W_C_IDX(w)))
#define W_SHFL_XOR_G(x, d) ((int)w_shfl_bfly((uint)(x), (d), W_C_IDX(GROUP)))
#define W_REDUCE_MAX(x) w_reduce_max(x)
#define W_ANY(p) w_any((int)(p))
#define W_KERNEL_PROLOGUE
#define W_REQD_SUBGROUP 0

#elif EXCHANGE == EXCHANGE_KHR || EXCHANGE == EXCHANGE_INTEL || EXCHANGE == EXCHANGE_KHR_INDEXED
#ifdef cl_khr_subgroups
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if EXCHANGE == EXCHANGE_INTEL
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#define W_SHUFFLE(x, i) intel_sub_group_shuffle((x), (uint)(i))
#else
#define W_SHUFFLE(x, i) sub_group_shuffle((x), (uint)(i))
#endif
#define W_SG_LANE ((int)get_sub_group_local_id())
/* the first lane of a group replaces what it gets */
#define W_SHFL_UP_G(x) W_SHUFFLE((x), max(W_SG_LANE - 1, 0))
#define W_SHFL_UP32(x) W_SHFL_UP_G(x)
#define W_SHFL_IDX(x, r, w) W_SHUFFLE((x), (W_SG_LANE & ~((w) - 1)) + (r))
#define W_SHFL_XOR_G(x, d) W_SHUFFLE((x), W_SG_LANE ^ (d))
#define W_REDUCE_MAX(x) sub_group_reduce_max(x)
#define W_ANY(p) sub_group_any((int)(p))
#define W_KERNEL_PROLOGUE
#define W_REQD_SUBGROUP 1

#else /* EXCHANGE_LOCAL: one warp per work-group, every exchange through local memory */
#if BLOCK != 32
#error "the local-memory exchange synchronizes the whole work-group: BLOCK must be 32"
#endif
/* a program-scope __local variable is not OpenCL C 1.2: each kernel declares the scratch and
 * passes it to the helpers (W_SCRATCH_PARAM) */
#define W_KERNEL_PROLOGUE __local int w_s_[32]; __local int *w_s = w_s_;
#define W_SCRATCH_PARAM __local int *w_s,
#define W_SCRATCH_ARG w_s,
static inline int w_xchg(__local int *s, int v, int src)
{
    s[get_local_id(0)] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int r = s[src];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
static inline int w_max32(__local int *s, int v)
{
    s[get_local_id(0)] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    int r = s[0];
    for (int i = 1; i < 32; i++) r = max(r, s[i]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
#define W_LANE ((int)get_local_id(0))
#define W_SHFL_UP_G(x) ((u32)w_xchg(w_s, (int)(x), max(W_LANE - 1, 0)))
#define W_SHFL_UP32(x) W_SHFL_UP_G(x)
#define W_SHFL_IDX(x, r, w) w_xchg(w_s, (x), (W_LANE & ~((w) - 1)) + (r))
#define W_SHFL_XOR_G(x, d) w_xchg(w_s, (x), W_LANE ^ (d))
#define W_REDUCE_MAX(x) w_max32(w_s, (x))
#define W_ANY(p) (w_max32(w_s, (p) ? 1 : 0) > 0)
#define W_REQD_SUBGROUP 0
/* No lazy xE here: PoCL (3.1 with LLVM 15; 5.0 on a Xeon) miscomputed the full MSV's xJ with
 * the group reduction's barriers inside the vote's (warp-uniform) branch (GROUP < 32; Intel's
 * runtime was right; the same vote with the reduction before the branch was right on PoCL too).
 * The vote costs a barrier round of its own on this path, so every row reduces. */
#undef LAZY_XE
#define LAZY_XE 0
#endif

#if W_REQD_SUBGROUP && defined(cl_intel_required_subgroup_size)
#define W_SUBGROUP_ATTR __attribute__((intel_reqd_sub_group_size(32)))
#else
#define W_SUBGROUP_ATTR
#endif
#define W_KERNEL(name) \
    __kernel W_SUBGROUP_ATTR __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void name

#include "profile/warp.h"
