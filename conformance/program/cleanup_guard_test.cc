// The cleanup guard (cleanup_guard.h): a process killed with SIGKILL in the middle of its work leaves nothing behind.
#include "conformance/program/cleanup_guard.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "conformance/program/file_system.h"

namespace lockstep {
namespace {

using namespace std::chrono_literals;

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

// Within 10 s (a loaded machine): the guard acts when it sees its process gone.
bool eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 1000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// A process that registered a report set being renamed (one rename done), a temporary file and a temporary directory,
// and started a process carrying one of its driver tokens, then died of SIGKILL: the guard finishes the set, removes
// the temporaries and kills the token holder, also one that called setsid().
TEST(CleanupGuard, SigkillMidSetLeavesTheSetCompleteAndNothingBehind) {
  files::TempDir dir("lockstep-guard-test");
  const std::string d = dir.path();
  const std::string pid_file = files::join(d, "holder.pid");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cleanup_guard::start();
    if (!cleanup_guard::running()) ::_exit(3);
    for (const char* name : {".a.tmp", ".b.tmp", ".c.tmp"}) std::ofstream(files::join(d, name)) << name;
    files::create_directories(files::join(d, "jobs/0"));
    std::ofstream(files::join(d, "jobs/0/stdout")) << "x";
    cleanup_guard::remove_on_exit(files::join(d, ".c.tmp"));  // a temporary being written
    cleanup_guard::remove_on_exit(files::join(d, "jobs"));
    cleanup_guard::remove_on_exit(files::join(d, ".a.tmp"));
    cleanup_guard::remove_on_exit(files::join(d, ".b.tmp"));
    cleanup_guard::rename_on_exit(files::join(d, ".a.tmp"), files::join(d, "a"));
    cleanup_guard::rename_on_exit(files::join(d, ".b.tmp"), files::join(d, "b"));
    if (::rename(files::join(d, ".a.tmp").c_str(), files::join(d, "a").c_str()) != 0) ::_exit(4);
    // A driver's child that left its process group, with this process's token (driver_process.h).
    const std::string token = "LOCKSTEP_DRIVER_TOKEN=" + std::to_string(::getpid()) + "-0";
    const std::string script = "echo $$ > " + pid_file + "; exec sleep 60";
    const char* argv[] = {"setsid", "sh", "-c", script.c_str(), nullptr};
    const char* env[] = {token.c_str(), "PATH=/usr/bin:/bin", nullptr};
    pid_t holder = -1;
    if (::posix_spawnp(&holder, "setsid", nullptr, nullptr, const_cast<char* const*>(argv),
                       const_cast<char* const*>(env)) != 0)
      ::_exit(5);
    for (int i = 0; i < 500 && read_all(pid_file).empty(); ++i) std::this_thread::sleep_for(10ms);
    ::raise(SIGKILL);  // between the two renames
    ::_exit(6);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child exited " << WEXITSTATUS(status);
  EXPECT_TRUE(eventually([&] { return exists(files::join(d, "b")); })) << "the set's second rename was not completed";
  EXPECT_EQ(read_all(files::join(d, "a")), ".a.tmp");
  EXPECT_EQ(read_all(files::join(d, "b")), ".b.tmp");
  EXPECT_TRUE(eventually([&] { return !exists(files::join(d, ".c.tmp")) && !exists(files::join(d, "jobs")); }))
      << "temporaries left";
  EXPECT_FALSE(exists(files::join(d, ".a.tmp")));
  EXPECT_FALSE(exists(files::join(d, ".b.tmp")));
  const std::string holder_pid = read_all(pid_file);
  ASSERT_FALSE(holder_pid.empty()) << "the token holder did not start";
  const pid_t holder = static_cast<pid_t>(std::stol(holder_pid));
  EXPECT_TRUE(eventually([&] { return !process_alive(holder); })) << "the token holder outlived its lockstep";
  if (process_alive(holder)) ::kill(holder, SIGKILL);
}

// A registration forgotten (the work was done) is not done again: a file of the same name written later stays.
TEST(CleanupGuard, ForgottenRegistrationsAreLeftAlone) {
  files::TempDir dir("lockstep-guard-test");
  const std::string kept = files::join(dir.path(), "kept"), removed = files::join(dir.path(), "removed");
  const std::string guard_file = files::join(dir.path(), "guard.pid");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cleanup_guard::start();
    std::ofstream(guard_file) << cleanup_guard::guard_pid();
    cleanup_guard::remove_on_exit(kept);
    cleanup_guard::remove_on_exit(removed);
    cleanup_guard::forget(kept);
    std::ofstream(kept) << "report";
    std::ofstream(removed) << "temporary";
    ::_exit(0);  // a normal end: the guard still acts on what is registered
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const pid_t guard = static_cast<pid_t>(std::stol(read_all(guard_file)));
  ASSERT_GT(guard, 0);
  EXPECT_TRUE(eventually([&] { return !process_alive(guard); })) << "the guard did not end with its process";
  EXPECT_TRUE(exists(kept)) << "a forgotten registration was acted on";
  EXPECT_FALSE(exists(removed)) << "a registered file was left";
}

// Without start() (a test binary, a framework's own runner), registering is a no-op.
TEST(CleanupGuard, WithoutStartNothingHappens) {
  EXPECT_FALSE(cleanup_guard::running());
  cleanup_guard::remove_on_exit("/nonexistent/lockstep-guard-test");
  cleanup_guard::forget("/nonexistent/lockstep-guard-test");
}

}  // namespace
}  // namespace lockstep
