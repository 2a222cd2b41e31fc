// The few file-system calls lockstep makes, on POSIX calls (stat, mkdir, opendir, mkdtemp, realpath), in place of
// std::filesystem.
//
// Why not std::filesystem: PyTorch's official LibTorch binaries (2.5 and later) export their own, statically linked
// copy of libstdc++'s std::filesystem (pytorch/pytorch#133437). A binary that links such a LibTorch and calls
// std::filesystem binds those calls to LibTorch's copy, which was built against another libstdc++ ABI: `lockstep run
// --jobs 2` and a test's temporary folders crashed with SIGSEGV on LibTorch 2.11 (issue 27). No lockstep source uses
// <filesystem>; `tools/check_no_filesystem.sh` (ctest `binaries_import_no_libstdcxx_fs`) checks the binaries with nm.
//
// Paths are plain strings. Example:
//   for (const std::string& f : files::list_files(dir, {".json"}, /*recursive=*/true, {"schema"})) read(f);
//   files::create_directories(report_dir);                    // throws std::runtime_error naming the path
//   files::TempDir tmp("lockstep-jobs");                      // $TMPDIR/lockstep-jobs.XXXXXX, removed at scope exit
#pragma once

#include <string>
#include <vector>

namespace lockstep::files {

bool exists(const std::string& path);
bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);
bool is_empty_directory(const std::string& path);  // false when it is not a directory

// Creates the directory and its missing parents (mkdir -p); throws std::runtime_error naming the path (an empty
// path is an error).
void create_directories(const std::string& path);
// Removes the file or the directory tree (rm -rf, symbolic links not followed); errors are ignored.
void remove_all(const std::string& path) noexcept;
// Removes one file; false when it could not.
bool remove_file(const std::string& path) noexcept;

// The names in a directory, without "." and "..", sorted; throws std::runtime_error naming the directory.
std::vector<std::string> list_names(const std::string& dir);
// The regular files under dir (dir + "/" + name ...), sorted, whose names end with one of `extensions` (all when
// empty); with `recursive`, subdirectories too, except those named in `skip_dirs` and links to directories (a
// link to a file is listed). Entries with a wanted extension that are no regular file (a FIFO, a device, a link
// that leads nowhere or in a loop) are not read: with `skipped`, each is added there as "PATH: why". Throws
// std::runtime_error.
std::vector<std::string> list_files(const std::string& dir, const std::vector<std::string>& extensions,
                                    bool recursive = false, const std::vector<std::string>& skip_dirs = {},
                                    std::vector<std::string>* skipped = nullptr);

std::string join(const std::string& dir, const std::string& name);  // "a" + "b" -> "a/b"
std::string parent_path(const std::string& path);                  // "a/b/c" -> "a/b", "c" -> ""
std::string file_name(const std::string& path);                    // "a/b/c.json" -> "c.json"
std::string extension(const std::string& path);                    // "a/b/c.json" -> ".json", "a/b" -> ""
// realpath(3) of the path; of its directory plus its name when the file does not exist yet; else the path itself.
std::string canonical(const std::string& path);

// This process's executable (/proc/self/exe), "" when it cannot be read.
std::string executable_path();
// $TMPDIR when set and not empty, else /tmp.
std::string temp_directory();

// A new directory TEMP/prefix.XXXXXX (mkdtemp), removed with everything in it when the object goes.
// A directory of this process's own, made on first use and removed at exit. Tests write their files here:
// ctest runs the tests of one file in parallel processes, so a fixed name under /tmp is shared between them.
const std::string& process_temp_dir();

class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace lockstep::files
