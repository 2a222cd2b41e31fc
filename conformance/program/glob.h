// Globs on ids, field paths and feature names: '*' matches any run of characters (also none), '?' exactly one
// byte, everything else itself; no escapes.  glob_match("rnd-*", "rnd-3f2a") == true.
#pragma once

#include <string>

namespace lockstep {

bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace lockstep
