// The optional trace fields (see optional_fields.h).
#include "conformance/program/optional_fields.h"

#include "conformance/program/json_reader.h"

namespace lockstep {

const std::vector<OptionalField>& optional_fields() {
  static const std::vector<OptionalField> fields = {
      {"param.same_as_previous", "SEM-1.6",
       "the parameter is the same tensor as at the previous record (an optimizer updates it in place)",
       [](const ParamObservation& p) { return p.same_as_previous.has_value(); }},
  };
  return fields;
}

bool is_optional_field(const std::string& name) {
  for (const OptionalField& f : optional_fields())
    if (name == f.name) return true;
  return false;
}

std::string param_field_key(const std::string& name) {
  const std::string prefix = "param.";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : "";
}

std::optional<std::string> first_missing(const Trace& trace, const std::string& name) {
  const OptionalField* field = nullptr;
  for (const OptionalField& f : optional_fields())
    if (name == f.name) field = &f;
  if (!field) return std::nullopt;
  auto in_record = [&](const Record& r, const std::string& pointer) -> std::optional<std::string> {
    for (const ParamObservation& p : r.state.params)
      if (!field->reported(p)) return json_pointer_append(json_pointer_append(pointer, "params"), p.name);
    return std::nullopt;
  };
  if (auto p = in_record(trace.init, "/init")) return p;
  for (size_t i = 0; i < trace.records.size(); ++i)
    if (auto p = in_record(trace.records[i], json_pointer_append("/records", i))) return p;
  return std::nullopt;
}

}  // namespace lockstep
