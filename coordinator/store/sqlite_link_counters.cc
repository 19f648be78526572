// SqliteStore: port counters around a sweep's rounds and its links' verdicts (LinkCounterStore;
// migration 14, tables link_counter_deltas and link_verdicts). GUIDs are stored as hex text
// (SQLite's integers are signed; GUIDs use the top bit); a delta above INT64_MAX is stored as
// INT64_MAX with at_least set.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "coordinator/store/sqlite_internal.h"

namespace gdrmesh {

using sqlite_detail::columnText;
using sqlite_detail::StmtScope;

namespace {

// The one column list of each table, shared by the INSERT and the SELECT.
constexpr const char* kLinkCounterColumns =
    "sweep_id, round, switch_guid, port, counter, switch_name, link, delta, at_least, seconds";
constexpr const char* kLinkVerdictColumns =
    "sweep_id, link, switch_name, switch_guid, port, remote_name, remote_guid, remote_port, "
    "verdict, evidence";

std::string linkGuidText(uint64_t guid) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, guid);
  return text;
}

int bindLinkText(sqlite3_stmt* s, int i, const std::string& v) {
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

std::string joinEvidence(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::vector<std::string> splitEvidence(const std::string& text) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from < text.size()) {
    size_t nl = text.find('\n', from);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  return out;
}

LinkCounterRecord linkCounterFromRow(sqlite3_stmt* s) {
  LinkCounterRecord r;
  r.sweep_id = columnText(s, 0);
  r.round = sqlite3_column_int(s, 1);
  r.switch_guid = std::strtoull(columnText(s, 2).c_str(), nullptr, 16);
  r.port = sqlite3_column_int(s, 3);
  r.counter = columnText(s, 4);
  r.switch_name = columnText(s, 5);
  r.link = columnText(s, 6);
  r.delta = static_cast<uint64_t>(sqlite3_column_int64(s, 7));
  r.at_least = sqlite3_column_int(s, 8) != 0;
  r.seconds = sqlite3_column_double(s, 9);
  return r;
}

LinkVerdictRecord linkVerdictFromRow(sqlite3_stmt* s) {
  LinkVerdictRecord r;
  r.sweep_id = columnText(s, 0);
  r.link = columnText(s, 1);
  r.switch_name = columnText(s, 2);
  r.switch_guid = std::strtoull(columnText(s, 3).c_str(), nullptr, 16);
  r.port = sqlite3_column_int(s, 4);
  r.remote_name = columnText(s, 5);
  r.remote_guid = std::strtoull(columnText(s, 6).c_str(), nullptr, 16);
  r.remote_port = sqlite3_column_int(s, 7);
  r.verdict = columnText(s, 8);
  r.evidence = splitEvidence(columnText(s, 9));
  return r;
}

}  // namespace

Status SqliteStore::putLinkCounters(const std::vector<LinkCounterRecord>& rows) {
  GDR_RETURN_IF_ERROR(validateLinkCounters(rows));
  if (rows.empty()) return Status();
  MutexLock lock(writer_.mu);
  return writeInTransaction([&]() -> Status {
    GDR_ASSIGN_OR_RETURN(
        sqlite3_stmt * ins,
        statement(writer_, "insert_link_counter",
                  std::string("INSERT OR REPLACE INTO link_counter_deltas (") +
                      kLinkCounterColumns + ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    for (const LinkCounterRecord& r : rows) {
      StmtScope scope(ins);
      const bool clipped = r.delta > kMax;
      int rc = bindLinkText(ins, 1, r.sweep_id);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 2, r.round);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 3, linkGuidText(r.switch_guid));
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 4, r.port);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 5, r.counter);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 6, r.switch_name);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 7, r.link);
      if (rc == SQLITE_OK) {
        rc = sqlite3_bind_int64(ins, 8, static_cast<int64_t>(clipped ? kMax : r.delta));
      }
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 9, r.at_least || clipped ? 1 : 0);
      if (rc == SQLITE_OK) rc = sqlite3_bind_double(ins, 10, r.seconds);
      if (rc == SQLITE_OK) rc = sqlite3_step(ins);
      if (rc != SQLITE_DONE) return error(writer_, rc, "insert_link_counter");
    }
    return Status();
  });
}

Result<std::vector<LinkCounterRecord>> SqliteStore::sweepLinkCounters(const std::string& sweep_id) {
  if (sweep_id.empty()) {
    return invalidArgument("sweepLinkCounters: empty sweep id", "name the sweep");
  }
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "sweep_link_counters",
                                 std::string("SELECT ") + kLinkCounterColumns +
                                     " FROM link_counter_deltas WHERE sweep_id = ?1"
                                     " ORDER BY round, switch_guid, port, counter"));
  StmtScope scope(s);
  int rc = bindLinkText(s, 1, sweep_id);
  if (rc != SQLITE_OK) return error(c, rc, "sweep_link_counters");
  std::vector<LinkCounterRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.push_back(linkCounterFromRow(s));
  if (rc != SQLITE_DONE) return error(c, rc, "sweep_link_counters");
  return out;
}

Status SqliteStore::putLinkVerdicts(const std::string& sweep_id,
                                    const std::vector<LinkVerdictRecord>& rows) {
  GDR_RETURN_IF_ERROR(validateLinkVerdicts(sweep_id, rows));
  MutexLock lock(writer_.mu);
  return writeInTransaction([&]() -> Status {
    GDR_ASSIGN_OR_RETURN(sqlite3_stmt * del,
                         statement(writer_, "delete_link_verdicts",
                                   "DELETE FROM link_verdicts WHERE sweep_id = ?1"));
    {
      StmtScope scope(del);
      int rc = bindLinkText(del, 1, sweep_id);
      if (rc == SQLITE_OK) rc = sqlite3_step(del);
      if (rc != SQLITE_DONE) return error(writer_, rc, "delete_link_verdicts");
    }
    GDR_ASSIGN_OR_RETURN(
        sqlite3_stmt * ins,
        statement(writer_, "insert_link_verdict",
                  std::string("INSERT INTO link_verdicts (") + kLinkVerdictColumns +
                      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    for (const LinkVerdictRecord& r : rows) {
      StmtScope scope(ins);
      int rc = bindLinkText(ins, 1, r.sweep_id);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 2, r.link);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 3, r.switch_name);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 4, linkGuidText(r.switch_guid));
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 5, r.port);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 6, r.remote_name);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 7, linkGuidText(r.remote_guid));
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 8, r.remote_port);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 9, r.verdict);
      if (rc == SQLITE_OK) rc = bindLinkText(ins, 10, joinEvidence(r.evidence));
      if (rc == SQLITE_OK) rc = sqlite3_step(ins);
      if (rc != SQLITE_DONE) return error(writer_, rc, "insert_link_verdict");
    }
    return Status();
  });
}

Result<std::vector<LinkVerdictRecord>> SqliteStore::sweepLinkVerdicts(const std::string& sweep_id) {
  if (sweep_id.empty()) {
    return invalidArgument("sweepLinkVerdicts: empty sweep id", "name the sweep");
  }
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "sweep_link_verdicts",
                                 std::string("SELECT ") + kLinkVerdictColumns +
                                     " FROM link_verdicts WHERE sweep_id = ?1 ORDER BY link"));
  StmtScope scope(s);
  int rc = bindLinkText(s, 1, sweep_id);
  if (rc != SQLITE_OK) return error(c, rc, "sweep_link_verdicts");
  std::vector<LinkVerdictRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.push_back(linkVerdictFromRow(s));
  if (rc != SQLITE_DONE) return error(c, rc, "sweep_link_verdicts");
  return out;
}

}  // namespace gdrmesh
