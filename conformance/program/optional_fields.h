// Optional trace fields: observations added to the trace after protocol 1 (fixtures/PROTOCOL.md section 4a).
//
// A trace that grows must not break the drivers written before it grew. So every field added after protocol 1
// is optional: a driver reports it only if its hello announces it ("observes": ["param.same_as_previous"]),
// and then every record must carry it. An observation without it is *untested*, never a failure or a parse
// error: the comparator counts it (CompareContext::optional_fields) and every report lists, per field, how
// many observations were compared and how many went untested and why. The fields of protocol 1 stay
// required. In-process engines (impl, LibTorch) report every field.
//
// Adding one: a line in optional_fields() (optional_fields.cc), an std::optional member in trace.h, its JSON in
// trace_json.cc, its comparison in comparator.cc, the engines' observe(), SEMANTICS §8 and PROTOCOL.md 4a.
// A driver newer than this lockstep may announce and report a field it does not know: the field is dropped from
// its answers before they are read (driver_protocol.h) and the hello gets a warning.
//
// Example:
//   if (!is_optional_field("param.same_as_previous")) ...
//   if (auto p = first_missing(trace, "param.same_as_previous")) ... // "/records/3/params/w": not reported
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conformance/program/trace.h"

namespace lockstep {

struct OptionalField {
  const char* name;       // "param.same_as_previous": the hello's "observes" names it
  const char* semantics;  // "SEM-1.6"
  const char* what;       // one line for reports and `lockstep features --optional-fields`
  // Where it lives and whether an observation there reports it. Fields are per parameter for now (the name's
  // "param." prefix; the JSON key is the rest), read from each record's params.
  bool (*reported)(const ParamObservation&);
};

const std::vector<OptionalField>& optional_fields();
bool is_optional_field(const std::string& name);
// The JSON key of a parameter field: "param.same_as_previous" -> "same_as_previous"; "" for another name.
std::string param_field_key(const std::string& name);

// The JSON pointer (into the trace's JSON form) of the first observation of `trace` that lacks the optional
// field `name`; nullopt when every observation has it.
std::optional<std::string> first_missing(const Trace& trace, const std::string& name);

// How one optional field fared in a comparison: observations compared, and observations left untested
// because the implementation under test did not report the field or the expected side (an old fixture, a
// recorded trace) did not record it.
struct OptionalFieldCount {
  int64_t compared = 0;
  int64_t not_reported = 0;  // the implementation's trace lacks it
  int64_t not_expected = 0;  // the expected trace lacks it
  OptionalFieldCount& operator+=(const OptionalFieldCount& o) {
    compared += o.compared;
    not_reported += o.not_reported;
    not_expected += o.not_expected;
    return *this;
  }
};
using OptionalFieldCounts = std::map<std::string, OptionalFieldCount>;  // by field name

}  // namespace lockstep
