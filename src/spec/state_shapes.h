// Internal: recurrent-state shape calculators (per request, per layer, per rank) for Mamba1,
// Mamba2, short convolutions, linear attention, Gated DeltaNet (GDN) and Kimi Delta Attention
// (KDA). TP splits feature dimensions; DCP never splits recurrent state. `num_spec` widens the conv
// state by the speculative tokens for the models that do so (Mamba2, GDN). Errors: a dimension that
// TP does not divide, non-positive sizes.
#pragma once

#include <cstdint>
#include <vector>

#include "kvtopo/spec.h"

namespace kvtopo {

struct Mamba2Dims {
  int64_t intermediate_size = 0;
  int64_t n_groups = 0;
  int64_t state_size = 0;
  int64_t num_heads = 0;
  int64_t head_dim = 0;
  int64_t conv_kernel = 0;
};
// Each conv state below is written (state_len, channels), the engine's default layout; `layout`
// kChannelsFirst swaps the two (VLLM_SSM_CONV_STATE_LAYOUT=DS).
//
// conv (K - 1 + num_spec, (I + 2*G'*state) / tp); ssm (heads / tp, head_dim, state),
// G' = n_groups + (n_groups % tp == 0 ? 0 : tp - n_groups); n_groups 0 (PLaMo 2) keeps no B/C
// channels in the conv state. n_groups above 1 must divide by tp (rejected otherwise).
Result<std::vector<StateTensor>> Mamba2State(
    const Mamba2Dims& dims, int64_t tp, int64_t num_spec, ElementType conv_dtype,
    ElementType ssm_dtype, ConvStateLayout layout = ConvStateLayout::kStateLenFirst);

struct Mamba1Dims {
  int64_t intermediate_size = 0;
  int64_t state_size = 0;
  int64_t conv_kernel = 0;
};
// conv (K - 1, I / tp); ssm (I / tp, state). Mamba1 does not widen its conv state by speculative
// tokens.
Result<std::vector<StateTensor>> Mamba1State(
    const Mamba1Dims& dims, int64_t tp, ElementType conv_dtype, ElementType ssm_dtype,
    ConvStateLayout layout = ConvStateLayout::kStateLenFirst);

struct ShortConvDims {
  int64_t channels = 0;
  int64_t conv_kernel = 0;
};
// One conv state (K - 1, channels / tp) in the conv dtype (LFM2's short convolutions).
Result<std::vector<StateTensor>> ShortConvState(
    const ShortConvDims& dims, int64_t tp, ElementType conv_dtype,
    ConvStateLayout layout = ConvStateLayout::kStateLenFirst);

struct LinearAttentionDims {
  int64_t num_heads = 0;
  int64_t head_dim = 0;
};
// One state (heads / tp, head_dim, head_dim) in the conv dtype (MiniMax-Text-01's lightning
// attention).
Result<std::vector<StateTensor>> LinearAttentionState(const LinearAttentionDims& dims, int64_t tp,
                                                      ElementType dtype);

struct GdnDims {
  int64_t num_k_heads = 0;
  int64_t num_v_heads = 0;
  int64_t head_k_dim = 0;
  int64_t head_v_dim = 0;
  int64_t conv_kernel = 0;
};
// conv (K - 1 + num_spec, conv_dim / tp), conv_dim = 2*h_k*n_k + h_v*n_v;
// recurrent (n_v / tp, h_v, h_k).
Result<std::vector<StateTensor>> GdnState(const GdnDims& dims, int64_t tp, int64_t num_spec,
                                          ElementType conv_dtype, ElementType ssm_dtype,
                                          ConvStateLayout layout = ConvStateLayout::kStateLenFirst);

struct KdaDims {
  int64_t num_heads = 0;  // value heads
  int64_t head_dim = 0;
  int64_t num_k_heads = 0;  // 0: num_heads
  int64_t head_k_dim = 0;   // 0: head_dim
  int64_t conv_kernel = 0;
};
// Three conv states (K - 1, n*h / tp), (K - 1, n_k*h_k / tp) x 2 in `conv_dtype`, and the
// recurrent state (n / tp, h, h) in float32.
Result<std::vector<StateTensor>> KdaState(const KdaDims& dims, int64_t tp, ElementType conv_dtype,
                                          ConvStateLayout layout = ConvStateLayout::kStateLenFirst);

// Sum over tensors of prod(shape) * element bytes.
Result<int64_t> StateBytes(const std::vector<StateTensor>& state);

}  // namespace kvtopo
