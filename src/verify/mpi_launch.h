// Whether an MPI launcher started this process: asked by `kvtopo verify` with or without MPI built
// in (without it, a multi-process launch is an error rather than N copies of the whole run).
#pragma once

namespace kvtopo::internal {

// More than one process, by the launcher's environment: Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's
// or PMI's size variables, MPICH's MPI_LOCALNRANKS.
bool LaunchedByMpiWithProcesses();

}  // namespace kvtopo::internal
