#include "tools/trace_table.h"

#include "conformance/program/optimizer_descriptions.h"

#include <fmt/format.h>

namespace lockstep::tools {

namespace {

std::string values(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", v[i]);
  return out + "]";
}

std::string grad_cell(const GradObservation& g) {
  if (!g.defined) return "grad None";
  std::string s = "grad " + values(g.value.data);
  s += g.same_as_previous ? " same" : " new";
  if (g.requires_grad) s += " requires_grad";
  if (g.has_grad_fn) s += " grad_fn";
  return s;
}

std::string state_cell(const OptimizerStateObservation& s) {
  if (!s.exists) return "";
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (s.step) add(fmt::format("step {}", *s.step));
  for (const StateCountDescription& c : all_state_counts())  // L-BFGS's func_evals, n_iter
    if (const std::optional<int64_t>& v = s.*c.field) add(fmt::format("{} {}", c.name, *v));
  for (const StateTensorDescription& t : all_state_tensors())  // optimizer_descriptions.h
    if (const std::optional<TensorValue>& v = s.*t.field) add(std::string(t.name) + " " + values(v->data));
  return out;
}

void append_record(std::string& out, const std::string& title, const Record& r) {
  out += title;
  if (r.error) out += fmt::format("   ERROR {}: {}", r.error->kind, r.error->message);
  out += "\n";
  if (r.state.output) {
    const auto& o = *r.state.output;
    out += fmt::format("    {:<10} {} {}{}{}\n", "output", values(o.value.data), dtype_name(o.value.dtype),
                       o.requires_grad ? " requires_grad" : "", o.has_grad_fn ? " grad_fn" : "");
  }
  for (const auto& p : r.state.params) {
    out += fmt::format("    {:<10} {}   {}\n", p.name, values(p.value.data), grad_cell(p.grad));
    std::string st = state_cell(p.state);
    if (!st.empty()) out += fmt::format("    {:<10} state: {}\n", "", st);
  }
  for (const auto& h : r.state.handles)
    out += fmt::format("    handle {:<3} {}\n", h.name, h.defined ? values(h.value.data) : "None");
}

}  // namespace

std::string format_trace_table(const Program& program, const Trace& trace) {
  std::string out = fmt::format("engine: {}\n", trace.engine);
  append_record(out, "#init", trace.init);
  for (size_t i = 0; i < trace.records.size(); ++i) {
    const Record& r = trace.records[i];
    // A step with a closure (SEMANTICS §17.3): each call's records first, as they ran, then the step's own.
    for (size_t k = 0; k < r.calls.size(); ++k)
      for (size_t j = 0; j < r.calls[k].records.size(); ++j)
        append_record(out, fmt::format("#{}.{}.{} {} (closure of #{}, call {})", i, k + 1, j,
                                       r.calls[k].records[j].action, i, k + 1),
                      r.calls[k].records[j]);
    append_record(out, fmt::format("#{} {}", i, r.action), r);
    if (r.returned) out += fmt::format("    {:<10} {}\n", "returned", values(r.returned->data));
  }
  (void)program;
  return out;
}

}  // namespace lockstep::tools
