// See workload.hpp: the refusal of a parameter or gradient view the workload cannot take.
#include "workloads/workload.hpp"

#include "core/errors.hpp"

namespace dsgd {

void Workload::refuse(ConstBufferView v, const char* what) const {
  if (v.dtype != DType::dtype_f32)
    DSGD_THROW(Error, "pass float32 parameters", "{} {}: {} parameters (float32 only)", name(), what,
               dtype_name(v.dtype));
  if (!(v.device == device()))
    DSGD_THROW(Error, "allocate the model where the workload computes (Workload::device())",
               "{} {}: parameters on {}, but the workload computes on {}", name(), what, device_name(v.device),
               device_name(device()));
  DSGD_THROW(Error, "this is a bug: pass the whole flat parameter buffer", "{} {}: {} floats given, the model has {}",
             name(), what, v.count, param_count());
}

}  // namespace dsgd
