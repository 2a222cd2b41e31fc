// The bookkeeping every in-process engine (engine.h) does the same way, whatever its tensor type: parameters by
// name in the program's order, the held grad handles, the checks of a group index and of options foreign to the
// optimizer, and the observation of handles and groups. impl's engine (impl/engine_adapter.cc) and LibTorch's
// (oracle/torch_engine.cc) both keep their state here, so a new C++ engine writes only what differs: its
// tensors, its ops, its optimizers.
//
// Example:
//   EngineTables<torch::Tensor, torch::Tensor> tables;       // tensor type, type kept for grad identity
//   tables.add_param("w", w);                                // EngineError(other) when declared twice
//   tables.hold("g0", tables.tensor_of("w").grad());         // a handle: taken again, it is replaced
//   check_group_index(1, optimizer.param_groups().size());   // EngineError(no_such_group)
//   check_option_fields(OptimizerKind::SGD, changes, "set_options");   // EngineError(invalid_option)
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "conformance/program/optimizer_descriptions.h"
#include "conformance/run/engine.h"

namespace lockstep {

// Options foreign to the optimizer's kind (optimizer_descriptions.h) are refused before anything changes.
inline void check_option_fields(OptimizerKind kind, const OptimizerOptions& o, const std::string& where) {
  const std::vector<std::string> foreign = foreign_options(kind, o);
  if (foreign.empty()) return;
  std::string names;
  for (const auto& n : foreign) names += (names.empty() ? "" : ", ") + n;
  throw EngineError(error_kind::kInvalidOption, where + ": " + names + " is not an option of " + optimizer_name(kind));
}

// set_options on a group the optimizer does not have.
inline void check_group_index(int group, size_t groups) {
  if (group < 0 || static_cast<size_t>(group) >= groups)
    throw EngineError(error_kind::kNoSuchGroup,
                      "no param group " + std::to_string(group) + " (there are " + std::to_string(groups) + ")");
}

// `Tensor` is the engine's tensor handle (copies alias); `Identity` what the engine keeps of the grad seen at the
// previous observe() to tell grad.same_as_previous (SEM-1.1), kept alive so that its address cannot be reused.
// A parameter's previous tensor is kept for its same_as_previous (optional_fields.h).
template <class Tensor, class Identity>
class EngineTables {
 public:
  struct Param {
    std::string name;
    Tensor tensor;
    Identity previous_grad{};
    Tensor previous_tensor;  // the parameter at the previous observe() (the tensor created, before the first)
  };

  void add_param(const std::string& name, Tensor tensor) {
    if (index_.count(name)) throw EngineError(error_kind::kOther, "parameter '" + name + "' is declared twice");
    index_[name] = params_.size();
    params_.push_back({name, tensor, Identity{}, tensor});
  }

  Tensor& tensor_of(const std::string& name) {
    auto it = index_.find(name);
    if (it == index_.end()) throw EngineError(error_kind::kOther, "unknown parameter '" + name + "'");
    return params_[it->second].tensor;
  }
  bool has_param(const std::string& name) const { return index_.count(name) != 0; }

  std::vector<Param>& params() { return params_; }  // in the program's order
  const std::vector<Param>& params() const { return params_; }

  // hold_grad: `grad` (an alias, possibly undefined) under `handle`; a handle taken again is replaced.
  void hold(const std::string& handle, Tensor grad) {
    for (auto& h : handles_) {
      if (h.first == handle) {
        h.second = std::move(grad);
        return;
      }
    }
    handles_.emplace_back(handle, std::move(grad));
  }
  const std::vector<std::pair<std::string, Tensor>>& handles() const { return handles_; }  // first-taken order

  // The handles as observed (SEMANTICS §8); `defined(t)` and `value(t)` read the engine's tensors.
  template <class Defined, class Value>
  std::vector<HandleObservation> observe_handles(Defined defined, Value value) const {
    std::vector<HandleObservation> out;
    for (const auto& [name, grad] : handles_) {
      HandleObservation o;
      o.name = name;
      o.defined = defined(grad);
      if (o.defined) o.value = value(grad);
      out.push_back(std::move(o));
    }
    return out;
  }

 private:
  std::vector<Param> params_;
  std::map<std::string, size_t> index_;
  std::vector<std::pair<std::string, Tensor>> handles_;
};

}  // namespace lockstep
