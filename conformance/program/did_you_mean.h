// "Did you mean": the known name nearest to a mistyped one (`lockstep rnu` -> run, `--cout` -> --count).
//
//   nearest_name("rnu", {"run", "replay", "trace"})  // "run"
//   nearest_name("xyz", {"run", "replay"})           // "" (nothing near enough)
#pragma once

#include <string>
#include <vector>

namespace lockstep {

// Optimal-string-alignment distance (insertions, deletions, substitutions, adjacent transpositions).
size_t edit_distance(const std::string& a, const std::string& b);

// The known name nearest to `typed`, if it is within a third of the longer length (at least 2 edits allowed);
// a known name that starts with `typed` (an abbreviation) counts as near. "" when none is.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& known);

}  // namespace lockstep
