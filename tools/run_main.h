// The whole `lockstep` command line as a library call, for a C++ framework that tests its own Engine in-process
// (conformance/run/engine.h): its runner registers engine factories by name and gets every subcommand (run,
// trace, replay, mutants, merge, matrix, reports) with those engines selectable by --engine, compared with
// LibTorch action by action exactly as `lockstep run --engine impl` is.
//
// Example (examples/custom_engine/, built against the installed package: find_package(lockstep), lockstep::cli):
//   #include "tools/run_main.h"
//   int main(int argc, char** argv) {
//     return lockstep::run_main(argc, argv, {{"myengine", [] { return std::make_unique<MyEngine>(); }}});
//   }
//   $ my-lockstep run --engine myengine --count 1000 --report-dir reports
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conformance/run/engine.h"

namespace lockstep {

struct EngineRegistration {
  std::string name;                               // what --engine selects; not "impl" or "oracle"
  std::function<std::unique_ptr<Engine>()> make;  // a fresh engine per program
};

// The command line with the shipped data (named cases, expectations, fixtures, profiles) under `data_dir`
// (null: the source tree this lockstep was built from, or PREFIX/share/lockstep beside an installed binary).
// Returns the exit status: 0 success, 1 discrepancies found, 2 usage or input error.
int run_main_with_data(int argc, char** argv, const std::vector<EngineRegistration>& engines, const char* data_dir);

// An installed package (lockstep::cli) defines LOCKSTEP_DATA_DIR as its share/lockstep.
inline int run_main(int argc, char** argv, const std::vector<EngineRegistration>& engines = {}) {
#ifdef LOCKSTEP_DATA_DIR
  return run_main_with_data(argc, argv, engines, LOCKSTEP_DATA_DIR);
#else
  return run_main_with_data(argc, argv, engines, nullptr);
#endif
}

}  // namespace lockstep
