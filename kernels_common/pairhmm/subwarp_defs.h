/* Sub-warp Pair-HMM forward kernel: configuration and shared types, for both APIs (the host layout
 * in hmmbench/pairhmm/subwarp_layout.py mirrors these).
 *
 * Compile-time configuration (all -D defines, set by hmmbench/pairhmm/{cuda,opencl}_subwarp.py):
 *   SW_P           threads per group (4, 8, 16, 32); one group aligns one read to its haplotypes
 *   SW_K           read rows kept in registers per thread (multiple of 4); tile height SW_P*SW_K
 *   SW_DOUBLE      1: double precision with C = 2^1020 (the float64 recompute), 0: float, C = 2^120
 *   SW_EMIS_TABLE  1: emission looked up in a per-group shared table (6 hap codes x rows)
 *                  0: compare-and-select per cell from per-row registers
 *   SW_MULTI_TILE  1: reads longer than one tile run as several row tiles (boundary row through
 *                  a global scratch buffer); 0: every read of the launch fits one tile
 *   SW_BIN_MIN/MAX read lengths of the bin this kernel is specialized for (compile-time limits)
 *   SW_SCALED      2: the 5-instruction recurrence (float32 kernels), 1: the 6-instruction one
 *                  (every pair's last resort: it holds gap quality 0), 0: GATK's form (subwarp.h)
 *   SW_BLOCK       threads per block (work-group)
 *   SW_MIN_BLOCKS  CUDA __launch_bounds__ minimum resident blocks (caps registers: 3 -> 168)
 *   SW_MAXNREG     CUDA only, optional: __maxnreg__ register cap instead of the launch bounds
 *   SW_EXP_SCALE   1 (float only): every thread carries a power-of-two exponent beside its values,
 *                  so pairs far below float32's range stay float32 (see subwarp.h); 0: pairs
 *                  under SW_F32_MIN_ACCEPTED go to the double recompute
 */
#ifndef PAIRHMM_SUBWARP_DEFS_H
#define PAIRHMM_SUBWARP_DEFS_H

#ifndef SW_P
#define SW_P 8
#endif
#ifndef SW_K
#define SW_K 16
#endif
#ifndef SW_DOUBLE
#define SW_DOUBLE 0
#endif
#ifndef SW_EMIS_TABLE
#define SW_EMIS_TABLE 1
#endif
#ifndef SW_MULTI_TILE
#define SW_MULTI_TILE 0
#endif
#ifndef SW_BIN_MIN
#define SW_BIN_MIN 1
#endif
#ifndef SW_BIN_MAX
#define SW_BIN_MAX (SW_P * SW_K)
#endif
#ifndef SW_SCALED
#define SW_SCALED 1
#endif
#ifndef SW_BLOCK
#define SW_BLOCK 128
#endif
#ifndef SW_MIN_BLOCKS
#define SW_MIN_BLOCKS 1
#endif

#ifndef SW_EXP_SCALE
#define SW_EXP_SCALE 0
#endif
#if SW_DOUBLE
#undef SW_EXP_SCALE
#define SW_EXP_SCALE 0
#endif
/* The exponent scheme (proven on tests/helpers/subwarp_scaling.py, whose Scheme mirrors these): every
 * SW_EXP_EVERY unrolled iterations (4 steps each) a thread whose largest value lies outside
 * binades [SW_EXP_LOW, SW_EXP_HIGH] brings it to SW_EXP_TARGET. */
#ifndef SW_EXP_EVERY
#define SW_EXP_EVERY 4
#endif
#define SW_EXP_LOW 10
#define SW_EXP_HIGH 30
#define SW_EXP_TARGET 20
/* The check reads I of every SW_EXP_STRIDE-th row (and the last). */
#define SW_EXP_STRIDE 4
/* Over this gap to the sender's exponent the values a thread receives lie in the sender's
 * denormals: the pair goes to the double recompute. */
#ifndef SW_EXP_MAX_GAP
#define SW_EXP_MAX_GAP 150
#endif
/* A thread's last two rows are held 2^SW_EXP_SHIFT above its others (5-op form only: the
 * factors fold into those rows' emissions, A, B and one I gap, see setup_rows), so what it hands
 * on is that much larger and a gap g converts by 2^(g - SW_EXP_SHIFT): one float factor (up to
 * 2^126) holds every gap to SW_EXP_MAX_GAP, where 2^g would take two (3 more multiplies a step);
 * and its last row stays that far above the denormals. 0: no shift, two factors. */
#if !defined(SW_EXP_SHIFT) || SW_SCALED != 2
#undef SW_EXP_SHIFT
#define SW_EXP_SHIFT (SW_SCALED == 2 ? 24 : 0)
#endif
#define SW_EXP_TWO_FACTORS (SW_EXP_MAX_GAP - SW_EXP_SHIFT > 126)
/* 1: a single tile's lane 0 gets its row above (zeros, the injected D) from the conversion
 * of what it receives -- a factor 0 and D's conversion an FMA adding the injected value --
 * instead of three selects each step; 0: the selects (same values, for the A/B). */
#ifndef SW_LANE0_BY_FACTOR
#define SW_LANE0_BY_FACTOR 1
#endif
#define SW_LANE0_FMA (SW_EXP_SCALE && !SW_MULTI_TILE && SW_LANE0_BY_FACTOR)
/* 1: a single tile with exponents whose check interval fits its group (4 SW_EXP_EVERY <= SW_P)
 * gives lane 0 its haplotype codes from a window the group's lanes load at each check, one code
 * each (one indexed shuffle a step instead of a bounds check and a load); 0: the load. */
#ifndef SW_CODE_WINDOW_ON
#define SW_CODE_WINDOW_ON 1
#endif
#define SW_CODE_WINDOW (SW_EXP_SCALE && !SW_MULTI_TILE && 4 * SW_EXP_EVERY <= SW_P \
                        && SW_CODE_WINDOW_ON)

#define SW_TILE (SW_P * SW_K)
#define SW_GROUPS (SW_BLOCK / SW_P)
#define SW_Q (SW_K / 4)            /* float4 quads per thread's rows */
#define SW_CODES 6                 /* A C G T N + pad (pad columns past the haplotype end) */
#define SW_PAD_CODE 5
#define SW_N_CODE 4

#if (SW_K % 4) != 0 || SW_K < 4
#error "SW_K must be a positive multiple of 4"
#endif
#if (32 % SW_P) != 0 || SW_P < 2
#error "SW_P must divide 32"
#endif
#if !SW_MULTI_TILE && SW_BIN_MAX > SW_TILE
#error "bin longer than one tile needs SW_MULTI_TILE"
#endif

#if SW_DOUBLE
typedef double real_t;
#define SW_LOG10_C 307.0505955772608     /* 1020 * log10(2) */
#define SW_INIT_C 0x1p1020
#else
typedef float real_t;
#define SW_LOG10_C 36.12359947967774     /* 120 * log10(2) */
#define SW_INIT_C 0x1p120f
#endif

/* One work item: a read aligned to n_hap consecutive haplotypes; results go to
 * out[out + h] for h < n_hap (pairs of a batch are read-major, so a read's pairs are contiguous). */
typedef struct SwItem {
    int read;
    int hap;
    int n_hap;
    int out;
} SwItem;

/* Smallest float32 forward sum (with C) accepted; below it the pair is recomputed in double
 * (the contract's 1e-28; a larger value sends every pair through the recompute, for tests and
 * for timing the double kernels alone). */
#ifndef SW_F32_MIN_ACCEPTED
#define SW_F32_MIN_ACCEPTED 1e-28f
#endif
/* Optional (CUDA's float32 kernels without exponents of a cascading backend): reads longer than
 * SW_F32_LOW_FLOOR_ABOVE whose insertion qualities past the first base are all at most
 * SW_F32_LOW_FLOOR_IQ keep sums down to SW_F32_LOW_FLOOR instead (X = s M reaches float32's
 * denormals 3-4 decades under 1e-33 at such qualities; hmmbench/pairhmm/subwarp_layout.py's
 * f32_floors mirrors the rule; subwarp.h's SW_KEEPS applies it). */

/* Work levels of the counting sort: items of a bin ordered by descending work (log2 of the
 * item's haplotype bases, 16 levels per doubling). */
#define SW_LEVELS 256
/* Largest group size: a wavefront of n columns runs n + p - 1 steps (work estimate). */
#define SW_MAX_P 32

#endif
