// DatabaseHolder (one database, one coordinator: issue #22) and the store's answers to the file
// system faults of issue #23 that a unit test can make: a file-size limit (RLIMIT_FSIZE with
// SIGXFSZ ignored, as the coordinator runs) and a WAL index (-shm) that refuses writes (root and
// an ext4-like file system with the immutable attribute; skipped otherwise).
#include "coordinator/store/db_holder.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <string>

#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

using ::testing::HasSubstr;

bool exists(const std::string& path) {
  struct stat sb {};
  return ::stat(path.c_str(), &sb) == 0;
}

class DatabaseHolderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  std::string db() const { return dir_.file("r.db"); }
  TempDir dir_;
};

TEST_F(DatabaseHolderTest, ASecondHolderIsRefusedNamingTheFirst) {
  auto first = DatabaseHolder::acquire(db());
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_FALSE((*first)->previous().has_value()) << "a new lock file names no one";
  ASSERT_TRUE((*first)->announce("127.0.0.1:7070").ok());
  // flock is per open file: a second acquire in this process conflicts like another process.
  auto second = DatabaseHolder::acquire(db());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              HasSubstr("database " + db() + " is in use by another coordinator: pid " +
                        std::to_string(::getpid())));
  EXPECT_THAT(second.status().message(), HasSubstr("listening on 127.0.0.1:7070"));
  EXPECT_THAT(second.status().message(), HasSubstr(DatabaseHolder::lockPath(db())));
  EXPECT_THAT(second.status().fix(), HasSubstr("own --db"));
}

TEST_F(DatabaseHolderTest, AHolderThatEndsRemovesTheFileAndTheNextTakesIt) {
  {
    auto first = DatabaseHolder::acquire(db());
    ASSERT_TRUE(first.ok()) << first.status().toString();
    EXPECT_TRUE(exists(DatabaseHolder::lockPath(db())));
  }
  EXPECT_FALSE(exists(DatabaseHolder::lockPath(db()))) << "a holder that ends removes the file";
  auto next = DatabaseHolder::acquire(db());
  ASSERT_TRUE(next.ok()) << next.status().toString();
  EXPECT_FALSE((*next)->previous().has_value());
}

// A holder killed (-9) leaves its file, unlocked: the next one takes it over and says whose it was.
TEST_F(DatabaseHolderTest, AStaleLockFileIsTakenOverNamingItsHolder) {
  std::ofstream(DatabaseHolder::lockPath(db())) << "pid=999999\nhost=gone\nlisten=10.0.0.1:7070\n";
  auto next = DatabaseHolder::acquire(db());
  ASSERT_TRUE(next.ok()) << next.status().toString();
  ASSERT_TRUE((*next)->previous().has_value());
  EXPECT_EQ((*next)->previous()->pid, 999999);
  EXPECT_EQ((*next)->previous()->describe(), "pid 999999 on host gone, listening on 10.0.0.1:7070");
  auto again = DatabaseHolder::acquire(db());
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.status().message(), HasSubstr("pid " + std::to_string(::getpid())));
  EXPECT_THAT(again.status().message(), HasSubstr("not listening yet"));
}

TEST_F(DatabaseHolderTest, AMissingDirectoryIsNamedWithTheFix) {
  auto h = DatabaseHolder::acquire(dir_.file("no/such/r.db"));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), Code::kNotFound);
  EXPECT_THAT(h.status().fix(), HasSubstr("mkdir -p"));
}

// ---------------------------------------------------------------------------------------------

class StoreFileFaultTest : public DatabaseHolderTest {};

// Under RLIMIT_FSIZE a write past the limit raises SIGXFSZ; ignored (as the coordinator does),
// it is EFBIG, and the store names the limit and the fix instead of an anonymous I/O error.
TEST_F(StoreFileFaultTest, AFileSizeLimitIsResourceExhaustedNamingTheLimit) {
  auto store = SqliteStore::open(db());
  ASSERT_TRUE(store.ok()) << store.status().toString();
  ASSERT_TRUE((*store)->insertResult(makeResult("t-0", "a", "b", 1)).ok());
  struct stat wal {};
  ASSERT_EQ(::stat((db() + "-wal").c_str(), &wal), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit capped{static_cast<rlim_t>(wal.st_size), old.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &capped), 0);
  TestResult big = makeResult("t-big", "a", "b", 2);
  big.reason = std::string(64 * 1024, 'x');
  auto id = (*store)->insertResult(big);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kResourceExhausted) << id.status().toString();
  EXPECT_THAT(id.status().message(), HasSubstr("file-size limit"));
  EXPECT_THAT(id.status().fix(), HasSubstr("ulimit -f"));
  // The limit lifted, the same row goes in.
  auto again = (*store)->insertResult(big);
  EXPECT_TRUE(again.ok()) << again.status().toString();
}

// Sets or clears the immutable attribute (chattr +i / -i); false where the file system or the
// process's privileges do not allow it.
bool setImmutable(const std::string& path, bool on) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  if (ok) {
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    ok = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  }
  if (ok && on) ok = ::fsync(fd) == 0;  // the mapped pages written back: the next store faults
  ::close(fd);
  return ok;
}

// Issue #23: SQLite maps <db>-shm; with the file immutable and its pages written back, the next
// store into the mapping (a read mark, a commit, the checkpoint at close) killed the process with
// SIGBUS. The store must not touch it: writes fail naming the file, reads go around the mapping,
// and closing the store does not checkpoint.
TEST_F(StoreFileFaultTest, AWalIndexThatRefusesWritesIsNeverStoredInto) {
  auto opened = SqliteStore::open(db());
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(*opened);
  ASSERT_TRUE(store->insertResult(makeResult("t-0", "a", "b", 1)).ok());
  const std::string shm = db() + "-shm";
  if (!setImmutable(shm, true)) GTEST_SKIP() << "no immutable attribute here (needs root, ext4)";
  struct Restore {
    std::string path;
    ~Restore() { (void)setImmutable(path, false); }
  } restore{shm};

  auto id = store->insertResult(makeResult("t-1", "a", "b", 2));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kPermissionDenied) << id.status().toString();
  EXPECT_THAT(id.status().message(), HasSubstr(shm));
  EXPECT_THAT(id.status().fix(), HasSubstr("write access"));
  ResultQuery all;
  all.limit = 0;
  auto rows = store->queryResults(all);
  ASSERT_TRUE(rows.ok()) << rows.status().toString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].test_id, "t-0");
  auto got = store->getResult("t-0");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_TRUE(got->has_value());
  // Closed while the WAL index refuses writes: no checkpoint into it.
  store.reset();
  // Writable again: a new store has every row.
  ASSERT_TRUE(setImmutable(shm, false));
  auto reopened = SqliteStore::open(db());
  ASSERT_TRUE(reopened.ok()) << reopened.status().toString();
  ASSERT_TRUE((*reopened)->insertResult(makeResult("t-1", "a", "b", 2)).ok());
  rows = (*reopened)->queryResults(all);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u);
}

}  // namespace
}  // namespace gdrmesh::testing
