// A tiny engine: how a C++ framework plugs into lockstep in-process (conformance/run/engine.h). A real framework
// translates each call into its own API; this one hands every call to lockstep's clean-room implementation, so the
// example has something that passes. make_tiny_engine(true) is a deliberately wrong one: its step() runs the
// optimizer twice, which lockstep must catch at the first step.
#pragma once

#include <memory>

#include "conformance/run/engine.h"

std::unique_ptr<lockstep::Engine> make_tiny_engine(bool steps_twice);
