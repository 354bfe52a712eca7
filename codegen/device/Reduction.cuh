// Reductions across the threads that share a row: embedded into the CUDA
// prelude at build time. Every thread gets the result; the order of
// combination is fixed, so results are deterministic.

// A lane's value from the lane `offset` away (lane ^ offset).
template <typename T>
static __device__ __forceinline__ T fusec_shuffle_xor(T value, int offset) {
  return __shfl_xor_sync(0xffffffffu, value, offset);
}
template <typename T>
static __device__ __forceinline__ FusecMaxExpSum<T>
fusec_shuffle_xor(FusecMaxExpSum<T> value, int offset) {
  return {fusec_shuffle_xor(value.max, offset),
          fusec_shuffle_xor(value.sum, offset)};
}

// Across the 32 lanes of a warp (butterfly).
template <typename Op, typename T>
static __device__ __forceinline__ T fusec_warp_allreduce(T value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    value = Op::combine(value, fusec_shuffle_xor(value, offset));
  return value;
}

// Across the WARPS warps of a block: each warp reduces, lane 0 publishes
// its partial in `scratch` (WARPS entries), every thread combines them.
template <typename Op, int WARPS, typename T>
static __device__ __forceinline__ T fusec_block_allreduce(T value, T *scratch) {
  value = fusec_warp_allreduce<Op>(value);
  if (WARPS == 1)
    return value;
  if ((threadIdx.x & 31) == 0)
    scratch[threadIdx.x >> 5] = value;
  __syncthreads();
  T result = scratch[0];
#pragma unroll
  for (int warp = 1; warp < WARPS; ++warp)
    result = Op::combine(result, scratch[warp]);
  __syncthreads(); // the scratch is free for the next reduction
  return result;
}
