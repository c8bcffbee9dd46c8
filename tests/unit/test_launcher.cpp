// Launcher detection (cluster/launcher): which environments count as started by an MPI
// launcher (Hydra, Slurm's srun with PMI-2 or PMIx, Open MPI, our self-launch), and srun
// without a PMI, which must be refused rather than run N worlds of one rank.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cluster/launcher.hpp"

using namespace dsgd;

namespace {

LauncherEnv detect(const std::map<std::string, std::string>& vars) {
  return launcher_detect([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(Launcher, DetectsMpiLaunchersAndSlurm) {
  EXPECT_EQ(detect({}), LauncherEnv::none);
  // Hydra (mpiexec) and `srun --mpi=pmi2` both set PMI_RANK / PMI_SIZE.
  EXPECT_EQ(detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}), LauncherEnv::mpi_launcher);
  EXPECT_EQ(detect({{"PMI_RANK", "0"},
                    {"PMI_SIZE", "4"},
                    {"PMI_FD", "5"},
                    {"SLURM_STEP_NUM_TASKS", "4"},
                    {"SLURM_PROCID", "0"}}),
            LauncherEnv::mpi_launcher);
  // `srun --mpi=pmix`.
  EXPECT_EQ(detect({{"PMIX_RANK", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}}), LauncherEnv::mpi_launcher);
  EXPECT_EQ(detect({{"OMPI_COMM_WORLD_SIZE", "2"}}), LauncherEnv::mpi_launcher);
  EXPECT_EQ(detect({{"DSGD_LAUNCHED", "1"}}), LauncherEnv::mpi_launcher);
  // srun without a PMI plugin: several tasks, no PMI variables.
  EXPECT_EQ(detect({{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_PROCID", "2"}, {"SLURM_JOB_ID", "77"}}),
            LauncherEnv::slurm_without_pmi);
  // One task (srun -n 1, or an sbatch script's own environment): it may self-launch mpiexec.
  EXPECT_EQ(detect({{"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_PROCID", "0"}}), LauncherEnv::none);
  EXPECT_EQ(detect({{"SLURM_JOB_ID", "77"}, {"SLURM_NTASKS", "8"}}), LauncherEnv::none);
}
