// POSIX file-system calls (file_system.h): what the readers and the command line rely on.
#include "conformance/program/file_system.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace lockstep::files {
namespace {

void touch(const std::string& path) { std::ofstream(path) << "x"; }

TEST(FileSystem, PathParts) {
  EXPECT_EQ(join("a", "b"), "a/b");
  EXPECT_EQ(join("a/", "b"), "a/b");
  EXPECT_EQ(join("", "b"), "b");
  EXPECT_EQ(parent_path("a/b/c"), "a/b");
  EXPECT_EQ(parent_path("a/b/"), "a");
  EXPECT_EQ(parent_path("c"), "");
  EXPECT_EQ(parent_path("/c"), "/");
  EXPECT_EQ(file_name("a/b/c.json"), "c.json");
  EXPECT_EQ(file_name("c.json"), "c.json");
  EXPECT_EQ(extension("a/b/c.json"), ".json");
  EXPECT_EQ(extension("a.d/b"), "");
  EXPECT_EQ(extension(".hidden"), "");
  EXPECT_EQ(extension("a/b.tar.gz"), ".gz");
}

TEST(FileSystem, CreateListAndRemoveATree) {
  std::string root;
  {
    TempDir tmp("lockstep-fs-test");
    root = tmp.path();
    ASSERT_TRUE(is_directory(root));
    EXPECT_TRUE(is_empty_directory(root));
    create_directories(join(root, "a/b/c"));
    create_directories(join(root, "a/b/c"));  // again: nothing to do
    EXPECT_TRUE(is_directory(join(root, "a/b/c")));
    touch(join(root, "a/one.json"));
    touch(join(root, "a/b/two.json"));
    touch(join(root, "a/b/three.txt"));
    create_directories(join(root, "a/schema"));
    touch(join(root, "a/schema/skipped.json"));
    EXPECT_FALSE(is_empty_directory(root));
    EXPECT_TRUE(is_regular_file(join(root, "a/one.json")));
    EXPECT_FALSE(is_regular_file(join(root, "a")));
    EXPECT_EQ(list_names(join(root, "a")), (std::vector<std::string>{"b", "one.json", "schema"}));
    EXPECT_EQ(list_files(join(root, "a"), {".json"}), (std::vector<std::string>{join(root, "a/one.json")}));
    EXPECT_EQ(list_files(join(root, "a"), {".json"}, true, {"schema"}),
              (std::vector<std::string>{join(root, "a/b/two.json"), join(root, "a/one.json")}));
    EXPECT_EQ(list_files(join(root, "a"), {}, true).size(), 4u);
    // A dangling link is neither listed nor an error; a link to a directory is not followed by remove_all.
    ASSERT_EQ(::symlink(join(root, "nowhere").c_str(), join(root, "a/dangling.json").c_str()), 0);
    ASSERT_EQ(::symlink(join(root, "a/b").c_str(), join(root, "link").c_str()), 0);
    EXPECT_EQ(list_files(join(root, "a"), {".json"}).size(), 1u);
    ASSERT_EQ(::symlink(join(root, "a").c_str(), join(root, "a/b/loop").c_str()), 0);
    EXPECT_EQ(list_files(join(root, "a"), {".json"}, true, {"schema"}).size(), 2u) << "a link to a directory is not followed";
    remove_all(join(root, "a/b/loop"));
    remove_all(join(root, "link"));
    EXPECT_TRUE(is_regular_file(join(root, "a/b/two.json")));
    EXPECT_TRUE(remove_file(join(root, "a/one.json")));
    EXPECT_FALSE(remove_file(join(root, "a/one.json")));
    EXPECT_EQ(canonical(join(root, "a/b/../b/two.json")), canonical(join(root, "a/b")) + "/two.json");
    EXPECT_EQ(canonical(join(root, "a/b/not-yet.json")), canonical(join(root, "a/b")) + "/not-yet.json");
  }
  EXPECT_FALSE(exists(root)) << "TempDir removes its tree";
}

TEST(FileSystem, ErrorsNameThePath) {
  TempDir tmp("lockstep-fs-test");
  touch(join(tmp.path(), "file"));
  try {
    create_directories(join(tmp.path(), "file/sub"));
    FAIL() << "created a directory under a file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(join(tmp.path(), "file")), std::string::npos) << e.what();
  }
  EXPECT_THROW(list_names(join(tmp.path(), "missing")), std::runtime_error);
  EXPECT_THROW(create_directories(""), std::runtime_error);
  EXPECT_THROW(list_files(join(tmp.path(), "file"), {}), std::runtime_error);
  EXPECT_FALSE(is_empty_directory(join(tmp.path(), "missing")));
}

TEST(FileSystem, ExecutableAndTemp) {
  const std::string exe = executable_path();
  EXPECT_TRUE(is_regular_file(exe)) << exe;
  EXPECT_EQ(file_name(exe).rfind("conformance_tests", 0), 0u) << exe;
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/somewhere", 1);
  EXPECT_EQ(temp_directory(), "/somewhere");
  ::setenv("TMPDIR", "", 1);
  EXPECT_EQ(temp_directory(), "/tmp");
  if (old) ::setenv("TMPDIR", saved.c_str(), 1); else ::unsetenv("TMPDIR");
}

}  // namespace
}  // namespace lockstep::files
