// The operations `dsgd-bench calibrate` sweeps, as one table (nccl-tests' struct testColl per
// collective): for each, the name stored in the `collectives` and `fits` tables, what it
// measures, how many float32 elements a buffer of S bytes uses, the bytes the busiest rank
// sends per iteration, the nccl-tests bus-bandwidth factor (docs/metrics.md), and one
// iteration run through the Communicator, so that every backend that implements the
// operation is calibrated by the same code. Adding an operation is one row here.
//
// The buffers live on the sweep's device (CalibrationSweepPlan::device: the backend row's), so the
// same rows measure a device backend's collectives on device memory.
//
// Limits: float32 only; the point-to-point and one-sided rows move data between ranks 0 and 1
// only (the other ranks idle), so their time is the slowest rank's = rank 0's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/vector_ops.hpp"

namespace dsgd {

// Buffers of an operation, allocated once for the largest size (convention: allocate once):
// host vectors, or, for a backend whose buffers live on a device (Communicator::memory_device:
// nccl), device buffers of that device.
struct CalibrationBuffers {
  DeviceBuffer a, b;  // on the sweep's device (CalibrationBuffers::device), zero-filled
  Device device = kHostDevice;
  CollEventLog log;          // the recorded operations record into it, as in training
  std::vector<char> stream;  // what an after-compute op streams first (calibration_after_compute_prepare)
};

struct CalibrationOp {
  const char* name;         // stored op name
  const char* description;  // what a table of it measured
  int min_ranks;            // ranks it needs (2: a pair)
  bool per_rank_blocks;     // the buffer is n equal blocks: the count is rounded down to a multiple of n
  bool recorded;            // runs through a recorded Communicator call (the log attached, as in training)
  bool needs_window;        // needs Communicator::window_create of the largest count first
  bool interleaved;         // measured with the row before it, repetitions interleaved (a harness/bare pair)
  double time_scale;        // per-iteration time x this (0.5: a ping-pong's one-way time)
  double (*busbw_factor)(int n);
  // Bytes rank 0 sends in one iteration on a buffer of `bytes` bytes (the ring algorithm's for
  // the collectives; what the Communicator records for the recorded ones).
  double (*bytes_sent)(double bytes, int n);
  void (*run)(Communicator& comm, CalibrationBuffers& buf, size_t count);
  // Timed after a stretch of compute, as a training step issues it, not back to back: before
  // each iteration every rank streams a buffer larger than its caches and rewrites the op's
  // buffers (calibration_after_compute_prepare), then all meet at a barrier; one iteration per
  // repetition. The simulator reads these curves for workloads whose step computes for
  // kAfterComputeMinStepS or more (docs/sim.md, "The host's own fabric").
  bool after_compute = false;
};

// The compute before one iteration of an after-compute op: streams (reads and writes one byte
// per cache line of) kAfterComputeStreamBytes, then rewrites the op's buffers with zeros (a
// backward pass writes the gradient). Not the last-level cache's size: a virtual machine
// reports its host's (300 MB here), shared with other tenants, and a deep model's step streams
// tens of MB, not that. Nothing on a virtual clock (the simulator) or on a device's buffers.
inline constexpr size_t kAfterComputeStreamBytes = size_t(64) << 20;
void calibration_after_compute_prepare(Communicator& comm, CalibrationBuffers& buf, size_t count);

// Every operation, in sweep order.
const std::vector<CalibrationOp>& calibration_ops();
// Throws Error for an unknown name (a bug: names come from the table).
const CalibrationOp& calibration_op_find(std::string_view name);
// Elements a buffer of `bytes` bytes uses (0: the op cannot run at that size on n ranks).
size_t calibration_op_count(const CalibrationOp& op, int64_t bytes, int n);
// Whether the op can run on this communicator (its rank count).
bool calibration_op_runs_on(const CalibrationOp& op, int n);
// Whether the op can run on buffers of `device`: on a device, only the recorded operations
// (the bare all-reduce and the one-sided windows take host memory).
bool calibration_op_runs_on_device(const CalibrationOp& op, Device device);

}  // namespace dsgd
