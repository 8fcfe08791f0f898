// The resident database's launch order computed on the device (hmmbench/profile/cuda.py,
// device_launch_order): sequences by decreasing length, ties in index order -- the order
// host.launch_order gives -- from each sequence's length class (its index among the ascending
// distinct lengths, uploaded with the database). NumPy's stable sort took 16 ms of the H100
// host's database load; this takes well under a millisecond.
//
// A stable counting sort over tiles of ORDER_TILE sequences, key = n_classes - 1 - class:
//   order_count  per tile, a shared-memory histogram of its keys -> table[key][tile]
//   order_scan   an exclusive scan of the key-major table (one block): table[key][tile] is then
//                the first slot of the tile's sequences of that key, after every longer
//                sequence and after the same key's sequences of earlier tiles
//   order_place  per tile, one thread walks its sequences in index order and places each at
//                its key's cursor (so ties keep their index order)
// Defines: ORDER_TILE, ORDER_THREADS. Dynamic shared memory: n_classes ints (count),
// n_classes + ORDER_TILE ints (place).

extern "C" __global__ void __launch_bounds__(ORDER_THREADS)
order_count(const int *__restrict__ cls, const int n, const int n_classes, int *__restrict__ table)
{
    extern __shared__ int hist[];
    const int tile = blockIdx.x, tiles = gridDim.x;
    for (int k = threadIdx.x; k < n_classes; k += ORDER_THREADS) hist[k] = 0;
    __syncthreads();
    const int end = min(n, (tile + 1) * ORDER_TILE);
    for (int i = tile * ORDER_TILE + threadIdx.x; i < end; i += ORDER_THREADS)
        atomicAdd(&hist[n_classes - 1 - cls[i]], 1);
    __syncthreads();
    for (int k = threadIdx.x; k < n_classes; k += ORDER_THREADS)
        table[(long long)k * tiles + tile] = hist[k];
}

extern "C" __global__ void __launch_bounds__(1024) order_scan(int *table, const long long len)
{
    __shared__ int part[1024];
    const int t = threadIdx.x;
    const long long per = (len + 1023) / 1024;
    const long long lo = min(len, t * per), hi = min(len, lo + per);
    int own = 0;
    for (long long i = lo; i < hi; i++) own += table[i];
    part[t] = own;
    __syncthreads();
    for (int d = 1; d < 1024; d <<= 1) {          // inclusive scan of the segment sums
        const int v = t >= d ? part[t - d] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    int run = part[t] - own;
    for (long long i = lo; i < hi; i++) {
        const int c = table[i];
        table[i] = run;
        run += c;
    }
}

extern "C" __global__ void __launch_bounds__(ORDER_THREADS)
order_place(const int *__restrict__ cls, const int n, const int n_classes,
            const int *__restrict__ table, int *__restrict__ order)
{
    extern __shared__ int sh[];
    int *cursor = sh, *key = sh + n_classes;
    const int tile = blockIdx.x, tiles = gridDim.x, first = tile * ORDER_TILE;
    const int count = min(n - first, ORDER_TILE);
    for (int k = threadIdx.x; k < n_classes; k += ORDER_THREADS)
        cursor[k] = table[(long long)k * tiles + tile];
    for (int j = threadIdx.x; j < count; j += ORDER_THREADS)
        key[j] = n_classes - 1 - cls[first + j];
    __syncthreads();
    if (threadIdx.x == 0)
        for (int j = 0; j < count; j++) order[cursor[key[j]]++] = first + j;
}
