// Where lockstep's shipped data lives, laid out as in the source tree: conformance/cases/ (named cases),
// conformance/compare/expectations.json (impl's expectations), fixtures/corpus/ (golden fixtures),
// fixtures/profiles/ (API profiles).
//
// In order: $LOCKSTEP_DATA_DIR; set_data_dir() (run_main() of a runner built against the installed package);
// PREFIX/share/lockstep when this executable is PREFIX/bin/... of an installed lockstep (cmake --install); else the
// source tree it was built from.
//
// Example:
//   std::string cases = data_dir() + "/conformance/cases";
#pragma once

#include <string>

namespace lockstep {

std::string data_dir();
void set_data_dir(const std::string& dir);
// The source tree this lockstep was built from (its tests' data). Only data_dir.cc is compiled with its path, so
// every other object compiles alike in any checkout folder (ccache with CCACHE_BASEDIR, tools/setup.sh).
std::string source_dir();

}  // namespace lockstep
