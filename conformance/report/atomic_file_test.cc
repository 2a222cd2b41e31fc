// Tests of atomic file writing: the contents arrive whole, no temporary file is left, errors name the path.
#include "conformance/report/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

std::string fresh_directory() {
  std::string templ = ::testing::TempDir() + "atomic_file_test_XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  EXPECT_NE(mkdtemp(buf.data()), nullptr);
  return buf.data();
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicFile, WritesWholeContentsAndLeavesNoTemporaryFile) {
  const std::string dir = fresh_directory();
  const std::string path = dir + "/report.md";
  std::string big(1 << 20, 'x');
  big += "end";
  write_file_atomically(path, big);
  EXPECT_EQ(read(path), big);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"report.md"});
  // Overwriting replaces the file.
  write_file_atomically(path, "second\n");
  EXPECT_EQ(read(path), "second\n");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"report.md"});
  // The usual permissions, not mkstemp's 0600.
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  unlink(path.c_str());
  rmdir(dir.c_str());
}

TEST(AtomicFile, ErrorsNameThePathAndLeaveNothing) {
  const std::string dir = fresh_directory();
  const std::string missing = dir + "/no/such/dir/report.json";
  try {
    write_file_atomically(missing, "x");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  // Renaming over a directory fails after the temporary file was written: it must be removed.
  const std::string subdir = dir + "/taken";
  ASSERT_EQ(mkdir(subdir.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((subdir + "/child").c_str(), 0755), 0);
  EXPECT_THROW(write_file_atomically(subdir, "x"), std::runtime_error);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"taken"});
  EXPECT_THROW(write_file_atomically("", "x"), std::runtime_error);
  rmdir((subdir + "/child").c_str());
  rmdir(subdir.c_str());
  rmdir(dir.c_str());
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// A set of files (a run's reports) is replaced together or not at all: a write that fails for the last file
// leaves the old first and second files in place and no temporary file (issue 14: one by one, a failure left a
// new .md beside an old .json).
TEST(AtomicFile, ASetIsReplacedTogetherOrNotAtAll) {
  const std::string dir = fresh_directory();
  write_files_atomically({{dir + "/r.md", "old md"}, {dir + "/r.json", "old json"}});
  EXPECT_THROW(write_files_atomically({{dir + "/r.md", "new md"},
                                       {dir + "/r.json", "new json"},
                                       {dir + "/missing/r.xml", "new xml"}}),
               std::runtime_error);
  EXPECT_EQ(sorted(entries(dir)), (std::vector<std::string>{"r.json", "r.md"}));
  EXPECT_EQ(read(dir + "/r.md"), "old md");
  EXPECT_EQ(read(dir + "/r.json"), "old json");
  write_files_atomically({{dir + "/r.md", "new md"}, {dir + "/r.json", "new json"}});
  EXPECT_EQ(read(dir + "/r.md"), "new md");
  EXPECT_EQ(read(dir + "/r.json"), "new json");
  EXPECT_EQ(sorted(entries(dir)), (std::vector<std::string>{"r.json", "r.md"}));
  unlink((dir + "/r.md").c_str());
  unlink((dir + "/r.json").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace lockstep
