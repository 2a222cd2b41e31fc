// Where lockstep's shipped data lives (data_dir.h).
#include "conformance/program/data_dir.h"

#include "conformance/program/file_system.h"

#include <cstdlib>

namespace lockstep {

namespace {

std::string& chosen() {
  static std::string dir;
  return dir;
}

// PREFIX/share/lockstep when this executable is in PREFIX/bin and that directory holds the named cases.
std::string installed_beside_executable() {
  const std::string exe = files::executable_path();
  if (exe.empty()) return "";
  const std::string share = files::parent_path(files::parent_path(exe)) + "/share/lockstep";
  return files::is_directory(share + "/conformance/cases") ? share : "";
}

}  // namespace

void set_data_dir(const std::string& dir) { chosen() = dir; }

std::string data_dir() {
  if (const char* env = std::getenv("LOCKSTEP_DATA_DIR"); env && *env) return env;
  if (!chosen().empty()) return chosen();
  static const std::string installed = installed_beside_executable();
  if (!installed.empty()) return installed;
  return source_dir();
}

std::string source_dir() { return LOCKSTEP_SOURCE_DIR; }

}  // namespace lockstep
