// Small helpers shared by the libFuzzer targets of fuzz/ (see fuzz/CMakeLists.txt).
//
// The targets hold each input reader to its documented contract: for any bytes it returns a value or throws the
// error type its header names (InputError, JsonError). Anything else is a finding: another exception type
// escapes LLVMFuzzerTestOneInput and terminates (libstdc++ prints its type and what()), a broken invariant calls
// fuzz_fail() (abort), and the sanitizers report the rest.
//
// The targets deliberately do NOT mirror the last-resort `catch (const std::exception&)` of tools/main.cc: it
// turns every exception into exit status 2, which would hide exactly what the fuzzers look for (an
// std::out_of_range from a vector::at, an nlohmann::json::type_error from a get<>() on unchecked input).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/program/json_reader.h"

namespace lockstep::fuzz {

// The input as the readers take it: bytes in a std::string (embedded NULs included).
inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The input parsed as the reader's own file reader parses it (parse_json_text with its nesting bound); nullopt for
// what that rejects (JsonError: the documented rejection, not a finding).
inline std::optional<nlohmann::ordered_json> parsed_json(const std::string& text, int max_depth) {
  try {
    return parse_json_text(text, max_depth);
  } catch (const JsonError&) {
    return std::nullopt;
  }
}

// A broken invariant: says which and aborts, so that libFuzzer keeps the input as a crash.
[[noreturn]] inline void fuzz_fail(const std::string& what, const std::string& detail = "") {
  std::fprintf(stderr, "\nlockstep fuzz: %s\n", what.c_str());
  if (!detail.empty()) {
    const std::string shown = detail.size() > 4000 ? detail.substr(0, 4000) + "..." : detail;
    std::fprintf(stderr, "%s\n", shown.c_str());
  }
  std::fflush(stderr);
  std::abort();
}

}  // namespace lockstep::fuzz
