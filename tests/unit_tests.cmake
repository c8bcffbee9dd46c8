# The unit test table: one line per test file, with the module libraries it links.
foreach(entry
    "test_datasets:dsgd_workloads"
    "test_dataset_subset:dsgd_workloads"
    "test_svm:dsgd_workloads"
    "test_cost_file:dsgd_workloads"
    "test_chakra_trace:dsgd_workloads"
    "test_layers:dsgd_workloads"
    "test_blas_core:dsgd_workloads"
    "test_huge_pages:dsgd_workloads"
    "test_conv:dsgd_workloads"
    "test_blocked_layout:dsgd_workloads"
    "test_resnet:dsgd_workloads"
    "test_attention_layers:dsgd_workloads"
    "test_transformer:dsgd_algorithms"
    "test_store:dsgd_results"
    "test_statuses:dsgd_results"
    "test_run_copy:dsgd_results"
    "test_change_points:dsgd_results"
    "test_history:dsgd_results"
    "test_history_import:dsgd_results"
    "test_track:dsgd_results"
    "test_run_config:dsgd_core"
    "test_config_check:dsgd_algorithms"
    "test_backends:dsgd_algorithms"
    "test_device_seam:dsgd_engine"
    "test_clock:dsgd_core"
    "test_copy_aliasing:dsgd_core"
    "test_stats:dsgd_core"
    "test_output_file:dsgd_core"
    "test_trainer:dsgd_engine"
    "test_network_model:dsgd_cluster"
    "test_measured_fabric:dsgd_cluster"
    "test_fabric_file:dsgd_engine"
    "test_topology:dsgd_cluster"
    "test_launcher:dsgd_cluster"
    "test_trace:dsgd_results"
    "test_alpha_beta_fit:dsgd_results"
    "test_optimizer:dsgd_engine"
    "test_algos2:dsgd_algorithms"
    "test_algos3:dsgd_engine"
    "test_period_schedule:dsgd_engine"
    "test_decoupled_forward:dsgd_engine"
    "test_sim_world:dsgd_engine"
    "test_sim_validation_store:dsgd_results"
    "test_validation_notes:dsgd_engine"
    "test_report_rows:dsgd_results"
    "test_row_fields:dsgd_results"
    "test_report_html:dsgd_results"
    "test_report_groups:dsgd_results"
    "test_report_history_charts:dsgd_results"
    "test_report_suite:dsgd_results"
    "test_suite_claims:dsgd_results"
    "test_compare:dsgd_results"
    "test_dreamddp_schedule:dsgd_algorithms"
    "test_sim_p2p:dsgd_cluster"
    "test_ps:dsgd_algorithms"
    "test_compress_async:dsgd_algorithms"
    "test_tuner_gp:dsgd_tuner_core"
    "test_tuner_search:dsgd_tuner_core"
    "test_tuner_space:dsgd_tuner"
    "test_memory_estimate:dsgd_engine"
    "test_calibration_ops:dsgd_engine"
    "test_tune_validate:dsgd_tuner"
    "test_tuner_replay:dsgd_tuner"
    "test_tuner_prior:dsgd_tuner"
    "test_gpu_info:dsgd_core"
    "test_nccl_host:dsgd_cluster"
    "test_nccl_communicator:dsgd_engine")
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 name)
  list(GET parts 1 lib)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/unit/${name}.cpp)
    dsgd_unit_test(${name} ${lib})
  endif()
endforeach()

# GPU tests (CUDA builds): the kernels against the CPU implementations; each test skips with one
# line naming why where no device is usable (no driver or no GPU: CI and the build machines).
if(DSGD_HAVE_CUDA)
  dsgd_unit_test(test_cuda_kernels dsgd_algorithms)
  dsgd_unit_test(test_vector_ops_cuda dsgd_core)
endif()

# MPI tests: plain programs (exit 0 = pass) under mpiexec -n 2, linked to the module they test.
if(DSGD_HAVE_MPI AND DSGD_MPIEXEC)
  foreach(entry "test_window_lock:dsgd_cluster")
    string(REPLACE ":" ";" parts ${entry})
    list(GET parts 0 name)
    list(GET parts 1 lib)
    add_executable(${name} mpi/${name}.cpp)
    target_link_libraries(${name} PRIVATE ${lib})
    add_test(NAME mpi.${name} COMMAND ${DSGD_MPIEXEC} -n 2 $<TARGET_FILE:${name}>)
    set_tests_properties(mpi.${name} PROPERTIES TIMEOUT 300 RUN_SERIAL ON)
  endforeach()
  # The window lock with two ranks contending for each window besides its owner (500 epochs each).
  add_test(NAME mpi.test_window_lock_4 COMMAND ${DSGD_MPIEXEC} -n 4 $<TARGET_FILE:test_window_lock> 500)
  set_tests_properties(mpi.test_window_lock_4 PROPERTIES TIMEOUT 300 RUN_SERIAL ON)
  # Ranks on one host take the shared-memory windows; the same tests through MPI's one-sided
  # operations (the path of ranks on several hosts).
  add_test(NAME mpi.test_window_lock_rma COMMAND ${DSGD_MPIEXEC} -n 2 $<TARGET_FILE:test_window_lock>)
  add_test(NAME mpi.test_window_lock_rma_4 COMMAND ${DSGD_MPIEXEC} -n 4 $<TARGET_FILE:test_window_lock> 200)
  set_tests_properties(mpi.test_window_lock_rma mpi.test_window_lock_rma_4 PROPERTIES TIMEOUT 300 RUN_SERIAL ON
                       ENVIRONMENT "DSGD_MPI_WINDOW=rma")
endif()
