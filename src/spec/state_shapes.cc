#include "spec/state_shapes.h"

#include <fmt/format.h>

#include "internal/checked_math.h"

namespace kvtopo {
namespace {

Status CheckPositive(std::initializer_list<std::pair<const char*, int64_t>> fields,
                     const char* model) {
  for (const auto& [name, value] : fields) {
    if (value <= 0) {
      return InvalidArgument(
          fmt::format("{} state: {} must be positive, got {}", model, name, value));
    }
  }
  return Status::Ok();
}

Result<int64_t> SplitByTp(int64_t dim, int64_t tp, const char* what, const char* model) {
  if (dim % tp != 0) {
    return Rejected(
        fmt::format("{} state: {} = {} is not divisible by --tensor-parallel-size {}; choose a "
                    "tensor-parallel size that divides it",
                    model, what, dim, tp));
  }
  return dim / tp;
}

// A conv state of `channels` over `state_len` positions, in `layout`'s order.
StateTensor ConvState(int64_t state_len, int64_t channels, ElementType dtype,
                      ConvStateLayout layout) {
  if (layout == ConvStateLayout::kChannelsFirst) return {{channels, state_len}, dtype};
  return {{state_len, channels}, dtype};
}

}  // namespace

Result<std::vector<StateTensor>> Mamba2State(const Mamba2Dims& d, int64_t tp, int64_t num_spec,
                                             ElementType conv_dtype, ElementType ssm_dtype,
                                             ConvStateLayout layout) {
  KVTOPO_RETURN_IF_ERROR(CheckPositive({{"intermediate_size", d.intermediate_size},
                                        {"state_size", d.state_size},
                                        {"num_heads", d.num_heads},
                                        {"head_dim", d.head_dim},
                                        {"conv_kernel", d.conv_kernel},
                                        {"tensor_parallel_size", tp}},
                                       "Mamba2"));
  if (num_spec < 0) return InvalidArgument("Mamba2 state: num_spec must not be negative");
  if (d.n_groups < 0) {
    return InvalidArgument(
        fmt::format("Mamba2 state: n_groups must not be negative, got {}", d.n_groups));
  }
  // MambaMixer2 asserts that TP divides the heads, then that it divides the groups unless there
  // is one group, which it replicates over the ranks.
  KVTOPO_ASSIGN_OR_RETURN(int64_t heads_local, SplitByTp(d.num_heads, tp, "num_heads", "Mamba2"));
  if (d.n_groups > 1 && d.n_groups % tp != 0) {
    return Rejected(fmt::format(
        "Mamba2 state: n_groups = {} is not divisible by --tensor-parallel-size {}, and the "
        "engine's Mamba2 mixer replicates groups only from one; choose a tensor-parallel size "
        "that divides it",
        d.n_groups, tp));
  }
  const int64_t groups = d.n_groups + (d.n_groups % tp == 0 ? 0 : tp - d.n_groups);
  const int64_t conv_dim = d.intermediate_size + 2 * groups * d.state_size;
  KVTOPO_ASSIGN_OR_RETURN(int64_t conv_local, SplitByTp(conv_dim, tp, "conv dim", "Mamba2"));
  return std::vector<StateTensor>{
      ConvState(d.conv_kernel - 1 + num_spec, conv_local, conv_dtype, layout),
      {{heads_local, d.head_dim, d.state_size}, ssm_dtype},
  };
}

Result<std::vector<StateTensor>> Mamba1State(const Mamba1Dims& d, int64_t tp,
                                             ElementType conv_dtype, ElementType ssm_dtype,
                                             ConvStateLayout layout) {
  KVTOPO_RETURN_IF_ERROR(CheckPositive({{"intermediate_size", d.intermediate_size},
                                        {"state_size", d.state_size},
                                        {"conv_kernel", d.conv_kernel},
                                        {"tensor_parallel_size", tp}},
                                       "Mamba1"));
  KVTOPO_ASSIGN_OR_RETURN(int64_t channels,
                          SplitByTp(d.intermediate_size, tp, "intermediate size", "Mamba1"));
  return std::vector<StateTensor>{
      ConvState(d.conv_kernel - 1, channels, conv_dtype, layout),
      {{channels, d.state_size}, ssm_dtype},
  };
}

Result<std::vector<StateTensor>> ShortConvState(const ShortConvDims& d, int64_t tp,
                                                ElementType conv_dtype, ConvStateLayout layout) {
  KVTOPO_RETURN_IF_ERROR(CheckPositive(
      {{"channels", d.channels}, {"conv_kernel", d.conv_kernel}, {"tensor_parallel_size", tp}},
      "short conv"));
  KVTOPO_ASSIGN_OR_RETURN(int64_t channels, SplitByTp(d.channels, tp, "channels", "short conv"));
  return std::vector<StateTensor>{ConvState(d.conv_kernel - 1, channels, conv_dtype, layout)};
}

Result<std::vector<StateTensor>> LinearAttentionState(const LinearAttentionDims& d, int64_t tp,
                                                      ElementType dtype) {
  KVTOPO_RETURN_IF_ERROR(CheckPositive(
      {{"num_heads", d.num_heads}, {"head_dim", d.head_dim}, {"tensor_parallel_size", tp}},
      "linear attention"));
  KVTOPO_ASSIGN_OR_RETURN(int64_t heads,
                          SplitByTp(d.num_heads, tp, "num_heads", "linear attention"));
  return std::vector<StateTensor>{{{heads, d.head_dim, d.head_dim}, dtype}};
}

Result<std::vector<StateTensor>> GdnState(const GdnDims& d, int64_t tp, int64_t num_spec,
                                          ElementType conv_dtype, ElementType ssm_dtype,
                                          ConvStateLayout layout) {
  KVTOPO_RETURN_IF_ERROR(CheckPositive({{"linear_num_key_heads", d.num_k_heads},
                                        {"linear_num_value_heads", d.num_v_heads},
                                        {"linear_key_head_dim", d.head_k_dim},
                                        {"linear_value_head_dim", d.head_v_dim},
                                        {"linear_conv_kernel_dim", d.conv_kernel},
                                        {"tensor_parallel_size", tp}},
                                       "GDN"));
  if (num_spec < 0) return InvalidArgument("GDN state: num_spec must not be negative");
  const int64_t conv_dim = 2 * d.head_k_dim * d.num_k_heads + d.head_v_dim * d.num_v_heads;
  KVTOPO_ASSIGN_OR_RETURN(int64_t conv_local, SplitByTp(conv_dim, tp, "conv dim", "GDN"));
  KVTOPO_ASSIGN_OR_RETURN(int64_t v_local,
                          SplitByTp(d.num_v_heads, tp, "linear_num_value_heads", "GDN"));
  return std::vector<StateTensor>{
      ConvState(d.conv_kernel - 1 + num_spec, conv_local, conv_dtype, layout),
      {{v_local, d.head_v_dim, d.head_k_dim}, ssm_dtype},
  };
}

Result<std::vector<StateTensor>> KdaState(const KdaDims& d, int64_t tp, ElementType conv_dtype,
                                          ConvStateLayout layout) {
  const int64_t k_heads = d.num_k_heads ? d.num_k_heads : d.num_heads;
  const int64_t k_dim = d.head_k_dim ? d.head_k_dim : d.head_dim;
  KVTOPO_RETURN_IF_ERROR(CheckPositive({{"num_heads", d.num_heads},
                                        {"head_dim", d.head_dim},
                                        {"num_k_heads", k_heads},
                                        {"head_k_dim", k_dim},
                                        {"short_conv_kernel_size", d.conv_kernel},
                                        {"tensor_parallel_size", tp}},
                                       "KDA"));
  KVTOPO_ASSIGN_OR_RETURN(int64_t v_local,
                          SplitByTp(d.num_heads * d.head_dim, tp, "num_heads * head_dim", "KDA"));
  KVTOPO_ASSIGN_OR_RETURN(int64_t k_local,
                          SplitByTp(k_heads * k_dim, tp, "num_k_heads * head_k_dim", "KDA"));
  KVTOPO_ASSIGN_OR_RETURN(int64_t heads_local, SplitByTp(d.num_heads, tp, "num_heads", "KDA"));
  return std::vector<StateTensor>{
      ConvState(d.conv_kernel - 1, v_local, conv_dtype, layout),
      ConvState(d.conv_kernel - 1, k_local, conv_dtype, layout),
      ConvState(d.conv_kernel - 1, k_local, conv_dtype, layout),
      {{heads_local, d.head_dim, d.head_dim}, ElementType::kFloat32},
  };
}

Result<int64_t> StateBytes(const std::vector<StateTensor>& state) {
  int64_t total = 0;
  for (const StateTensor& t : state) {
    int64_t n = ElementBytes(t.dtype);
    for (int64_t dim : t.shape) {
      if (dim <= 0) {
        return InvalidArgument(fmt::format("state tensor dimension must be positive, got {}", dim));
      }
      KVTOPO_ASSIGN_OR_RETURN(n, internal::CheckedMul(n, dim, "recurrent state bytes"));
    }
    KVTOPO_ASSIGN_OR_RETURN(total, internal::CheckedAdd(total, n, "recurrent state bytes"));
  }
  return total;
}

}  // namespace kvtopo
