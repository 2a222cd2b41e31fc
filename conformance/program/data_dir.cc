// Where lockstep's shipped data lives (data_dir.h).
#include "conformance/program/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace lockstep {

namespace {

std::string& chosen() {
  static std::string dir;
  return dir;
}

// PREFIX/share/lockstep when this executable is in PREFIX/bin and that directory holds the named cases.
std::string installed_beside_executable() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path share = exe.parent_path().parent_path() / "share" / "lockstep";
  return fs::is_directory(share / "conformance" / "cases", ec) ? share.string() : "";
}

}  // namespace

void set_data_dir(const std::string& dir) { chosen() = dir; }

std::string data_dir() {
  if (const char* env = std::getenv("LOCKSTEP_DATA_DIR"); env && *env) return env;
  if (!chosen().empty()) return chosen();
  static const std::string installed = installed_beside_executable();
  if (!installed.empty()) return installed;
  return LOCKSTEP_SOURCE_DIR;
}

}  // namespace lockstep
