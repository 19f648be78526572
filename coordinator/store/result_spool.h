// ResultSpool: the ResultWriter's file of results the store could not take yet (disk full, a
// read-only database), so that a kill -9 loses none of them. Not part of any store interface:
// any store (SQLite, in memory) can sit behind a writer that spools.
//
// Format: JSON lines ("<db>.spool" beside the database), one result per line, readable by a
// human (jq . < results.db.spool):
//   {"spool":2,"result":{"test_id":"...","run_id":"...",...}}
// The result's members are the store's result columns (store_columns.h), in their order; a
// figure that is not finite is the string "NaN", "Infinity" or "-Infinity". A line cut short by a
// crash mid-append (no newline, or not a whole record) is not a result: it was never
// acknowledged. A spool left by a build before this format (tab-separated, percent-escaped lines
// that begin with "gdrmesh-spool-1") is still read by replay(), once, and never written again.
//
// Space: a full disk refuses the spool too, so the spool holds space back ("<path>-reserve",
// allocated blocks, made when the spool is opened and again after each replay) and gives it
// back one block at a time when an append finds the disk full (issue #23).
//
// Thread contract: append() and replay() may be called from any thread; they serialise on the
// spool's own mutex.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// What a replay of the spool did (ResultSpool::replay).
struct SpoolReplay {
  uint64_t replayed = 0;        // results written to the store
  uint64_t already_stored = 0;  // results the store had already (stored by a retry)
  uint64_t torn = 0;            // records cut short by a crash mid-append (never acknowledged)
};

class ResultSpool {
 public:
  static constexpr uint64_t kDefaultReserveBytes = uint64_t{1} << 20;

  // `path`: the spool file, "<db>.spool" (spoolPathFor); "" = none (an in-memory database):
  // append() fails with kFailedPrecondition and replay() finds nothing. Fills the reserve.
  explicit ResultSpool(std::string path, uint64_t reserve_bytes = kDefaultReserveBytes);
  ResultSpool(const ResultSpool&) = delete;
  ResultSpool& operator=(const ResultSpool&) = delete;

  // "<db>.spool" for a database file, "" for ":memory:".
  static std::string spoolPathFor(const std::string& db_path);

  // Appends `result` as one line and syncs it before returning. Fails (naming the file and the
  // fix) when the spool cannot be written; a failed append leaves no partial record. A result
  // no store would take (empty test_id, ...) is kInvalidArgument.
  Status append(const TestResult& result);
  // Writes every spooled result `store` does not have yet, then removes the spool file (at
  // start, and once the store accepts writes again). On an error the file is kept, as JSON lines
  // (a spool of the earlier format is rewritten), holding what is not stored yet.
  Result<SpoolReplay> replay(ResultRecords& store);

  const std::string& path() const { return path_; }
  // "<path>-reserve" ("" without a spool file).
  std::string reservePath() const;

 private:
  void fillReserve();     // best effort: a full disk leaves it as it is
  bool releaseReserve();  // one block back; false when none is left
  Status rewrite(const std::vector<TestResult>& rows);

  const std::string path_;
  const uint64_t reserve_bytes_;
  Mutex mu_;  // serialises appends to and replays of the file
};

}  // namespace gdrmesh
