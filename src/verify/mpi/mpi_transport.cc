#include "verify/mpi/mpi_transport.h"

#include <fmt/format.h>
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>

namespace kvtopo::internal {

namespace {
Status MpiError(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Internal(fmt::format("{} failed: {}", call, std::string(text, length)));
}
}  // namespace

Result<std::unique_ptr<MpiTransport>> MpiTransport::Init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (int rc = MPI_Init(nullptr, nullptr); rc != MPI_SUCCESS) return MpiError("MPI_Init", rc);
  }
  // Errors come back as codes, not aborts.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiTransport>(new MpiTransport(rank, size));
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Status MpiTransport::Broadcast(std::vector<std::byte>& data) {
  int64_t size = static_cast<int64_t>(data.size());
  if (int rc = MPI_Bcast(&size, 1, MPI_INT64_T, 0, MPI_COMM_WORLD); rc != MPI_SUCCESS) {
    return MpiError("MPI_Bcast", rc);
  }
  if (size > INT_MAX) return Internal(fmt::format("a {}-byte step message exceeds MPI's", size));
  data.resize(size);
  if (int rc = MPI_Bcast(data.data(), static_cast<int>(size), MPI_BYTE, 0, MPI_COMM_WORLD);
      rc != MPI_SUCCESS) {
    return MpiError("MPI_Bcast", rc);
  }
  return Status::Ok();
}

Status MpiTransport::AllGather(std::span<const std::byte> local, std::span<std::byte> all) {
  if (local.size() > INT_MAX || all.size() != local.size() * static_cast<size_t>(size_)) {
    return Internal(
        fmt::format("an all-gather of {} bytes per process does not fit", local.size()));
  }
  const int count = static_cast<int>(local.size());
  if (int rc =
          MPI_Allgather(local.data(), count, MPI_BYTE, all.data(), count, MPI_BYTE, MPI_COMM_WORLD);
      rc != MPI_SUCCESS) {
    return MpiError("MPI_Allgather", rc);
  }
  return Status::Ok();
}

}  // namespace kvtopo::internal
