// POSIX file-system calls in place of std::filesystem (file_system.h says why).
#include "conformance/program/file_system.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace lockstep::files {

namespace {

bool stat_mode(const std::string& path, mode_t* mode, bool follow = true) {
  struct stat st {};
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return false;
  *mode = st.st_mode;
  return true;
}

std::runtime_error error(const std::string& what, const std::string& path, int err) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(err));
}

}  // namespace

bool exists(const std::string& path) {
  mode_t m;
  return stat_mode(path, &m);
}

bool is_directory(const std::string& path) {
  mode_t m;
  return stat_mode(path, &m) && S_ISDIR(m);
}

bool is_regular_file(const std::string& path) {
  mode_t m;
  return stat_mode(path, &m) && S_ISREG(m);
}

bool is_empty_directory(const std::string& path) {
  if (!is_directory(path)) return false;
  try {
    return list_names(path).empty();
  } catch (const std::runtime_error&) {
    return false;
  }
}

void create_directories(const std::string& path) {
  if (path.empty()) throw std::runtime_error("cannot create a directory with an empty name");
  if (is_directory(path)) return;
  const std::string parent = parent_path(path);
  if (!parent.empty() && parent != path && !is_directory(parent)) create_directories(parent);
  if (::mkdir(path.c_str(), 0777) != 0 && !(errno == EEXIST && is_directory(path)))
    throw error("cannot create the directory", path, errno);
}

void remove_all(const std::string& path) noexcept {
  mode_t m;
  if (!stat_mode(path, &m, /*follow=*/false)) return;
  if (S_ISDIR(m)) {
    if (DIR* d = ::opendir(path.c_str())) {
      std::vector<std::string> names;
      while (const dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
      }
      ::closedir(d);
      for (const std::string& n : names) remove_all(join(path, n));
    }
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

bool remove_file(const std::string& path) noexcept { return ::unlink(path.c_str()) == 0; }

std::vector<std::string> list_names(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) throw error("cannot list the directory", dir, errno);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  if (errno != 0) throw error("cannot list the directory", dir, errno);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> list_files(const std::string& dir, const std::vector<std::string>& extensions,
                                    bool recursive, const std::vector<std::string>& skip_dirs,
                                    std::vector<std::string>* skipped) {
  std::vector<std::string> out;
  for (const std::string& name : list_names(dir)) {
    const std::string path = join(dir, name);
    const std::string ext = extension(name);
    const bool wanted = extensions.empty() || std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
    mode_t m, own;
    if (!stat_mode(path, &own, /*follow=*/false)) continue;  // gone meanwhile
    if (!stat_mode(path, &m)) {  // a dangling link, a loop of links
      if (wanted && skipped) skipped->push_back(path + ": a link that leads to no file (" + std::strerror(errno) + ")");
      continue;
    }
    if (S_ISDIR(m)) {
      if (S_ISLNK(own)) continue;  // a link to a directory is not followed (as std::filesystem's iterators do not)
      if (!recursive || std::find(skip_dirs.begin(), skip_dirs.end(), name) != skip_dirs.end()) continue;
      std::vector<std::string> sub = list_files(path, extensions, recursive, skip_dirs, skipped);
      out.insert(out.end(), sub.begin(), sub.end());
    } else if (S_ISREG(m)) {
      if (wanted) out.push_back(path);
    } else if (wanted && skipped) {
      skipped->push_back(path + ": not a regular file (" +
                         (S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISSOCK(m) ? "a socket" : "a device") +
                         "), not read");
    }
  }
  std::sort(out.begin(), out.end());
  if (skipped) std::sort(skipped->begin(), skipped->end());
  return out;
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string parent_path(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string file_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string extension(const std::string& path) {
  const std::string name = file_name(path);
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 || name == "..") return "";
  return name.substr(dot);
}

std::string canonical(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer)) return buffer;
  const std::string parent = parent_path(path);
  if (::realpath(parent.empty() ? "." : parent.c_str(), buffer)) return join(buffer, file_name(path));
  return path;
}

std::string executable_path() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return "";
  return std::string(buffer, static_cast<size_t>(n));
}

std::string temp_directory() {
  const char* env = std::getenv("TMPDIR");
  return env && *env ? env : "/tmp";
}

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = join(temp_directory(), prefix + ".XXXXXX");
  if (!::mkdtemp(pattern.data())) throw error("cannot create a temporary directory in", temp_directory(), errno);
  path_ = pattern;
}

TempDir::~TempDir() { remove_all(path_); }

const std::string& process_temp_dir() {
  static const TempDir dir("lockstep-process");
  return dir.path();
}

}  // namespace lockstep::files
