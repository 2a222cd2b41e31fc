// The driver protocol's requests and answers (driver_protocol.h).
#include "conformance/run/driver_protocol.h"

#include <fmt/format.h>

#include "conformance/program/json_reader.h"
#include "conformance/program/optional_fields.h"
#include "conformance/program/trace_json.h"

namespace lockstep {

std::string driver_request_line(const std::string& id, const nlohmann::ordered_json& program_json) {
  nlohmann::ordered_json request;
  request["id"] = id;
  request["program"] = program_json;
  return request.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::set<std::string> announced_fields(const nlohmann::ordered_json& hello) {
  std::set<std::string> out;
  if (!hello.is_object() || !hello.contains("observes") || !hello.at("observes").is_array()) return out;
  for (const auto& name : hello.at("observes"))
    if (name.is_string()) out.insert(name.get<std::string>());
  return out;
}

DriverOutcome parse_driver_answer(const std::string& line, const std::string& id, const std::set<std::string>& observes) {
  DriverOutcome out;
  auto garbage = [&](const std::string& pointer, const std::string& message) {
    out.kind = DriverOutcome::Kind::Failure;
    out.failure_category = "garbage";
    out.failure = fmt::format("the driver's answer is not a valid answer{}: {} (line: {})",
                              pointer.empty() ? "" : " at " + pointer, message, truncate_for_message(line));
    return out;
  };
  nlohmann::ordered_json doc;
  try {
    doc = parse_json_text(line, 512);
  } catch (const JsonError& e) {
    return garbage(e.pointer(), "not JSON: " + e.message());
  }
  if (!doc.is_object()) return garbage("", std::string("expected an object, got ") + json_type_name(doc));
  try {
    JsonObjectReader r(doc, "", "an answer");
    std::string answer_id = r.string("id");
    if (answer_id != id) {
      out.kind = DriverOutcome::Kind::Failure;
      out.failure_category = "wrong_id";
      out.failure = fmt::format("the driver answered id '{}' for request '{}' (out of step)",
                                truncate_for_message(answer_id), id);
      return out;
    }
    const auto* trace = r.optional("trace");
    const auto* unsupported = r.optional("unsupported");
    r.finish(/*allow_comment=*/false);
    if ((trace != nullptr) == (unsupported != nullptr))
      return garbage("", "an answer holds exactly one of \"trace\" and \"unsupported\"");
    if (unsupported) {
      out.kind = DriverOutcome::Kind::Unsupported;
      out.feature = string_from_json(*unsupported, "/unsupported");
      if (out.feature.empty()) return garbage("/unsupported", "the feature name is empty");
      // Kept in every report of the case: bounded (docs/programs-and-limits.md "Limits").
      out.feature = truncate_for_message(out.feature, kMaxUnsupportedBytes);
      return out;
    }
    // A field a newer driver announces and this lockstep does not know (optional_fields.h): dropped unread. One
    // the reader knows stays whatever the hello says ("observes": ["param.grad"] drops no grad).
    nlohmann::ordered_json known_only;
    const std::vector<std::string>& known_keys = param_observation_keys();
    for (const std::string& field : observes) {
      const std::string key = param_field_key(field);
      if (is_optional_field(field) || key.empty() ||
          std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end())
        continue;
      if (known_only.is_null()) known_only = *trace;
      auto drop = [&](nlohmann::ordered_json& record) {
        if (!record.is_object()) return;
        if (record.contains("params") && record["params"].is_object())
          for (auto it = record["params"].begin(); it != record["params"].end(); ++it)
            if (it->is_object()) it->erase(key);
        // A step's closure calls hold records too (SEMANTICS §17.3); they do not nest.
        if (record.contains("calls") && record["calls"].is_array())
          for (auto& call : record["calls"])
            if (call.is_array())
              for (auto& sub : call)
                if (sub.is_object() && sub.contains("params") && sub["params"].is_object())
                  for (auto it = sub["params"].begin(); it != sub["params"].end(); ++it)
                    if (it->is_object()) it->erase(key);
      };
      if (known_only.is_object()) {
        if (known_only.contains("init")) drop(known_only["init"]);
        if (known_only.contains("records") && known_only["records"].is_array())
          for (auto& record : known_only["records"]) drop(record);
      }
    }
    try {
      out.trace = trace_from_json(known_only.is_null() ? *trace : known_only);
    } catch (const JsonError& e) {
      return garbage(json_pointer_append("", "trace") + e.pointer(), e.message());
    }
    for (const std::string& field : observes) {
      if (!is_optional_field(field)) continue;
      if (const std::optional<std::string> where = first_missing(out.trace, field))
        return garbage("/trace" + *where, "no \"" + param_field_key(field) + "\", which the hello announces (\"observes\": \"" +
                                              field + "\"); a driver reports an announced field in every record");
    }
    out.kind = DriverOutcome::Kind::Trace;
    return out;
  } catch (const JsonError& e) {
    return garbage(e.pointer(), e.message());
  }
}

DriverOutcome run_on_driver(ExternalDriver& driver, const std::string& id,
                            const nlohmann::ordered_json& program_json) {
  DriverReply reply = driver.request(driver_request_line(id, program_json));
  DriverOutcome out;
  if (reply.status == DriverReply::Status::Line) {
    out = parse_driver_answer(reply.line, id, announced_fields(driver.hello()));
    if (out.kind == DriverOutcome::Kind::Failure) driver.kill();  // it may be out of step
  } else {
    out.kind = DriverOutcome::Kind::Failure;
    out.failure_category = driver_status_name(reply.status);
    out.failure = reply.detail;
  }
  out.stderr_excerpt = std::move(reply.stderr_excerpt);
  out.elapsed = reply.elapsed;
  if (out.kind == DriverOutcome::Kind::Failure) driver.count_fault(out.failure_category, out.failure);
  else driver.count_answer();
  return out;
}

}  // namespace lockstep
