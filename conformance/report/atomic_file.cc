// Atomic file writing: temporary file in the same directory, fsync, rename (see atomic_file.h).
#include "conformance/report/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace lockstep {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
  throw std::runtime_error("cannot write " + path + ": " + what + ": " + std::strerror(error));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  if (path.empty()) throw std::runtime_error("cannot write a file with an empty path");
  // "dir/.name.tmp-XXXXXX": same directory as the destination, so rename() is atomic.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) throw std::runtime_error("cannot write " + path + ": the path names a directory");
  std::string temp_name = dir + "." + base + ".tmp-XXXXXX";
  std::vector<char> temp(temp_name.begin(), temp_name.end());
  temp.push_back('\0');
  const int fd = mkstemp(temp.data());
  if (fd < 0) fail(path, "cannot create a temporary file in its directory", errno);
  temp_name = temp.data();

  auto abandon = [&](const std::string& what, int error) {
    ::close(fd);
    ::unlink(temp_name.c_str());
    fail(path, what, error);
  };
  // mkstemp creates 0600; a report should get the usual permissions (0666 minus the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) abandon("cannot set permissions", errno);

  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed", errno);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync failed", errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp_name.c_str());
    fail(path, "close failed", error);
  }
  if (::rename(temp_name.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp_name.c_str());
    fail(path, "rename failed", error);
  }
}

}  // namespace lockstep
