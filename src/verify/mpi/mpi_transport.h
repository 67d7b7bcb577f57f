// The MPI transport of `kvtopo verify`: one process per DCP rank (or per equal share of them)
// under mpirun. Built only when CMake finds MPI (KVTOPO_HAVE_MPI); the rest of verify is MPI-free.
#pragma once

#include <memory>

#include "kvtopo/status.h"
#include "kvtopo/verify.h"

namespace kvtopo::internal {

// MPI_Init on creation, MPI_Finalize on destruction. Broadcast sends the size first; a message
// or an all-gather beyond 2 GiB is an error.
class MpiTransport final : public VerifyTransport {
 public:
  static Result<std::unique_ptr<MpiTransport>> Init();
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int32_t num_processes() const override { return size_; }
  int32_t process() const override { return rank_; }
  Status Broadcast(std::vector<std::byte>& data) override;
  Status AllGather(std::span<const std::byte> local, std::span<std::byte> all) override;

 private:
  MpiTransport(int32_t rank, int32_t size) : rank_(rank), size_(size) {}
  int32_t rank_;
  int32_t size_;
};

}  // namespace kvtopo::internal
