// Pair-HMM forward algorithm (GATK4 semantics), one CUDA thread per pair, float32.
//
// Thread p owns pair p: it walks the DP matrix row by row (read position i), keeping one row of
// M, I and D (n + 1 cells each) in its own slice of a global scratch buffer:
//   M[i][j] = emis * (mm*M[i-1][j-1] + gm*(I[i-1][j-1] + D[i-1][j-1]))
//   I[i][j] = mi*M[i-1][j] + ii*I[i-1][j]
//   D[i][j] = md*M[i][j-1] + dd*D[i][j-1]
// Row 0 is M = I = 0 and D = C/n in every column, column 0 included (as GATK sets it); the
// result is sum_{j>=1} M[m][j] + I[m][j], added up in column order. C = 2^120 keeps float32 away
// from underflow; the host recomputes in float64 any pair whose sum is still below 1e-28.
//
// Simple rather than fast: the scratch is read and written once per cell, and neighbouring
// threads touch addresses far apart (no coalescing). hmmbench's own inter-task kernels show
// what interleaving and tiling gain over this.

#define N_CODE 4       // base codes A0 C1 G2 T3 N4; N matches anything
#define NPROB 8        // per read position: match, mismatch, mm, gm, mi, ii, md, dd

extern "C" __global__ void forward_one_thread_per_pair(
    int n_pairs,
    const int* __restrict__ read_len, const long long* __restrict__ read_start,
    const int* __restrict__ hap_len, const long long* __restrict__ hap_start,
    const long long* __restrict__ scratch_start,
    const unsigned char* __restrict__ read_bases, const float* __restrict__ probs,
    const unsigned char* __restrict__ hap_bases,
    float* __restrict__ scratch, float* __restrict__ sums)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pairs) return;
    const int m = read_len[p], n = hap_len[p];
    const unsigned char* read = read_bases + read_start[p];
    const float* prob = probs + NPROB * read_start[p];
    const unsigned char* hap = hap_bases + hap_start[p];
    float* M = scratch + scratch_start[p];     // this pair's rows: M, I, D, n + 1 cells each
    float* I = M + (n + 1);
    float* D = I + (n + 1);

    const float row0_d = ldexpf(1.f, 120) / n;   // C / n, C = 2^120 exactly
    for (int j = 0; j <= n; ++j) { M[j] = 0.f; I[j] = 0.f; D[j] = row0_d; }

    for (int i = 1; i <= m; ++i) {
        const float* q = prob + NPROB * (i - 1);
        const float match = q[0], mismatch = q[1], mm = q[2], gm = q[3];
        const float mi = q[4], ii = q[5], md = q[6], dd = q[7];
        const unsigned char rb = read[i - 1];
        // (i-1, j-1) for j = 1 is row i-1's column 0; then column 0 of row i is all zero.
        float diag_m = M[0], diag_i = I[0], diag_d = D[0];
        M[0] = 0.f; I[0] = 0.f; D[0] = 0.f;
        float left_m = 0.f, left_d = 0.f;
        for (int j = 1; j <= n; ++j) {
            const float up_m = M[j], up_i = I[j], up_d = D[j];
            const unsigned char hb = hap[j - 1];
            const float emis = (rb == hb || rb == N_CODE || hb == N_CODE) ? match : mismatch;
            const float new_m = emis * (mm * diag_m + gm * (diag_i + diag_d));
            const float new_i = mi * up_m + ii * up_i;
            const float new_d = md * left_m + dd * left_d;
            M[j] = new_m; I[j] = new_i; D[j] = new_d;
            diag_m = up_m; diag_i = up_i; diag_d = up_d;
            left_m = new_m; left_d = new_d;
        }
    }
    float sum = 0.f;
    for (int j = 1; j <= n; ++j) sum += M[j] + I[j];
    sums[p] = sum;
}
