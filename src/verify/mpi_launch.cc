#include "verify/mpi_launch.h"

#include <cstdlib>
#include <initializer_list>

namespace kvtopo::internal {

bool LaunchedByMpiWithProcesses() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* v = std::getenv(name)) {
      if (std::atoi(v) > 1) return true;
    }
  }
  return false;
}

}  // namespace kvtopo::internal
