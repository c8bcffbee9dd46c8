// A Chakra execution trace (MLCommons Chakra, the input format of ASTRA-sim) read as a model's
// cost (docs/chakra.md): one rank's trace of one training step becomes the same CostFile a
// model cost file gives (workloads/cost_file.hpp), so `--workload chakra:FILE` runs wherever
// `profile:FILE` does.
//
// The file: a stream of protobuf messages, each preceded by its length as a varint; the first
// a GlobalMetadata, every other a Node (workloads/chakra_et.proto mirrors Chakra's schema).
// Plain or gzip-compressed, as Chakra's own reader accepts.
//
// The mapping. Nodes run in dependency order (data dependencies, ties in file order; control
// dependencies, in converted PyTorch traces the calling operator, are not followed). Compute nodes (COMP_NODE) are the
// step's compute: their duration_micros, summed. Each ALL_REDUCE collective (COMM_COLL_NODE) is a gradient bucket: the
// compute between it and the previous one is that bucket's backward, its comm_size the bucket's gradient bytes. In a
// sharded step (FSDP, ZeRO) each REDUCE_SCATTER is one, its comm_size (the collective's input, as Chakra's PyTorch
// converter records it) the bucket's whole gradient; the ALL_GATHERs of parameters are left out (--algo zero costs
// its own); a step with both all-reduces and reduce-scatters (hybrid sharding) is refused. The
// compute before the first node named like a backward op ("backward", any case) is the
// forward; without such a node it counts as the first bucket's backward and the forward is 0.
// The compute after the last bucket's collective is the optimizer. The layers of the CostFile are the
// buckets in forward order (the last one reduced first). The trace's own collective times
// are not used (the network model costs the gradients again); the source note reports them.
//
// Left out, and said so in the source note: compute and collective nodes marked is_cpu_op
// when the trace also has device compute (host-side operators and collective calls, whose
// time overlaps the kernels they launch), BROADCAST and
// BARRIER collectives, a sharded step's ALL_GATHERs, memory and metadata nodes. Refused: point-to-point send/recv
// (pipeline parallelism) and every other collective type (all-to-all, reduce, gather, scatter).
//
// The batch: a trace is one step at one batch. A GlobalMetadata attribute "batch_size" (a
// dsgd-bench convention, tools/chakra_trace.py writes it) records it, and then another --batch
// is refused; without it the times are taken to be those at the run's --batch.
#pragma once

#include <string>

#include "workloads/cost_file.hpp"

namespace dsgd {

// Whether this build reads Chakra traces (it needs protobuf: DSGD_WITH_PROTOBUF).
bool chakra_trace_supported();

// Reads one rank's trace. Throws InputError naming the file, and the node (its id and name)
// where one is at fault, on: an unreadable file; a file that is not a Chakra trace (its first
// message not a GlobalMetadata); a truncated or corrupt message (with its byte offset); a
// node without a type, with a negative duration (written into Chakra's unsigned field), with
// a repeated id or a data dependency on a node the trace lacks; a dependency cycle; no compute
// nodes, or none with a duration; no ALL_REDUCE or REDUCE_SCATTER, or both; a bucket's collective without a
// positive comm_size;
// a collective or point-to-point node dsgd-bench cannot cost; a batch_size that is not a
// positive integer. Without protobuf in the build, throws InputError saying what to install.
CostFile chakra_trace_read(const std::string& path);

}  // namespace dsgd
