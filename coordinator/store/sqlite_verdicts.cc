// SqliteStore: a sweep's report as rows (SweepStore::clearSweepReport ... countSweepVerdicts).
// The tables (sweep_verdicts, sweep_suspects, sweep_notes, sweep_report_summary) are made by
// migration 10, whose SQL is below (the list of migrations is in sqlite_schema.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/store/sqlite_internal.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {

namespace sqlite_detail {

// Migration 10: a judged sweep's report as rows (sqlite_verdicts.cc), converted from
// sweep_reports, which goes. One row per verdict in report order (seq); src_host and dst_host
// are the WORKER of src and dst, for the queries by host and by pair; reasons are a JSON array
// of strings ('' for none). A sweep's report is complete once its sweep_report_summary row is
// there (written last). The fabric's link verdicts and counter deltas get tables of their own
// keyed (sweep_id, ...) the same way, and clearSweepReport deletes them with the rest.
// sweep_verdicts alone names no foreign key: half a million rows a sweep would each probe
// sweeps; its writes check the sweep once per batch (sweepMustExist), and sweeps are never
// deleted (retention deletes results only).
const char* const kCreateSweepVerdicts = R"sql(
CREATE TABLE sweep_verdicts (
  sweep_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  test_id TEXT NOT NULL,
  src TEXT NOT NULL,
  dst TEXT NOT NULL,
  src_host TEXT NOT NULL,
  dst_host TEXT NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  message_size INTEGER NOT NULL,
  verdict TEXT NOT NULL,
  value REAL,
  unit TEXT NOT NULL,
  topo_class TEXT NOT NULL,
  retest INTEGER NOT NULL,
  reasons TEXT NOT NULL,
  PRIMARY KEY (sweep_id, seq)
) WITHOUT ROWID)sql";

const char* const kCreateSweepSuspects = R"sql(
CREATE TABLE sweep_suspects (
  sweep_id TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  score REAL,
  evidence TEXT NOT NULL,
  PRIMARY KEY (sweep_id, rank)
) WITHOUT ROWID)sql";

const char* const kCreateSweepNotes = R"sql(
CREATE TABLE sweep_notes (
  sweep_id TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  note TEXT NOT NULL,
  PRIMARY KEY (sweep_id, seq)
) WITHOUT ROWID)sql";

const char* const kCreateSweepReportSummary = R"sql(
CREATE TABLE sweep_report_summary (
  sweep_id TEXT PRIMARY KEY REFERENCES sweeps (id) ON DELETE CASCADE,
  figures_json TEXT NOT NULL
) WITHOUT ROWID)sql";

// The stored reports (JSON written by the coordinator before migration 10) as rows. A report
// that is not valid JSON converts to an empty one, as the reader of it treated it.
const char* const kConvertReportVerdicts = R"sql(
INSERT INTO sweep_verdicts (sweep_id, seq, test_id, src, dst, src_host, dst_host, op, mode,
  message_size, verdict, value, unit, topo_class, retest, reasons)
SELECT sweep_id, seq, test_id, src, dst,
  CASE WHEN instr(src, '/') > 0 THEN substr(src, 1, instr(src, '/') - 1) ELSE src END,
  CASE WHEN instr(dst, '/') > 0 THEN substr(dst, 1, instr(dst, '/') - 1) ELSE dst END,
  op, mode, message_size, verdict, value, unit, topo_class, retest, reasons
FROM (SELECT r.sweep_id AS sweep_id, CAST(j.key AS INTEGER) AS seq,
  iif(json_type(j.value, '$.test_id') = 'text', json_extract(j.value, '$.test_id'), '') AS test_id,
  iif(json_type(j.value, '$.src') = 'text', json_extract(j.value, '$.src'), '') AS src,
  iif(json_type(j.value, '$.dst') = 'text', json_extract(j.value, '$.dst'), '') AS dst,
  iif(json_extract(j.value, '$.op') IN ('write', 'read', 'send', 'write_imm'),
      json_extract(j.value, '$.op'), 'write') AS op,
  iif(json_extract(j.value, '$.mode') IN ('bw', 'lat'),
      json_extract(j.value, '$.mode'), 'bw') AS mode,
  iif(json_type(j.value, '$.size') = 'integer', json_extract(j.value, '$.size'), 0)
      AS message_size,
  iif(json_extract(j.value, '$.verdict') IN ('PASS', 'FAIL'),
      json_extract(j.value, '$.verdict'), 'SKIP') AS verdict,
  iif(json_type(j.value, '$.value') IN ('integer', 'real'), json_extract(j.value, '$.value'),
      NULL) AS value,
  iif(json_type(j.value, '$.unit') = 'text', json_extract(j.value, '$.unit'), '') AS unit,
  iif(json_type(j.value, '$.topo_class') = 'text', json_extract(j.value, '$.topo_class'), '')
      AS topo_class,
  iif(json_type(j.value, '$.retest') = 'true', 1, 0) AS retest,
  iif(json_type(j.value, '$.reasons') = 'array' AND json_array_length(j.value, '$.reasons') > 0,
      json_extract(j.value, '$.reasons'), '') AS reasons
FROM sweep_reports r, json_each(iif(json_valid(r.report_json), r.report_json, '{}'),
  '$.verdicts') j WHERE j.type = 'object'))sql";

const char* const kConvertReportSuspects = R"sql(
INSERT INTO sweep_suspects (sweep_id, rank, kind, name, score, evidence)
SELECT r.sweep_id, CAST(j.key AS INTEGER),
  iif(json_type(j.value, '$.kind') = 'text', json_extract(j.value, '$.kind'), ''),
  iif(json_type(j.value, '$.name') = 'text', json_extract(j.value, '$.name'), ''),
  iif(json_type(j.value, '$.score') IN ('integer', 'real'), json_extract(j.value, '$.score'),
      NULL),
  iif(json_type(j.value, '$.evidence') = 'array' AND
      json_array_length(j.value, '$.evidence') > 0, json_extract(j.value, '$.evidence'), '')
FROM sweep_reports r, json_each(iif(json_valid(r.report_json), r.report_json, '{}'),
  '$.suspects') j WHERE j.type = 'object')sql";

const char* const kConvertReportNotes = R"sql(
INSERT INTO sweep_notes (sweep_id, seq, note)
SELECT r.sweep_id, CAST(j.key AS INTEGER), j.value
FROM sweep_reports r, json_each(iif(json_valid(r.report_json), r.report_json, '{}'),
  '$.notes') j WHERE j.type = 'text')sql";

}  // namespace sqlite_detail

using sqlite_detail::columnText;
using sqlite_detail::StmtScope;

namespace {

// A list of strings as a JSON array ("" for none: most verdicts have no reasons). Text that is
// not UTF-8 is replaced, never refused (a reason quotes what a worker sent).
std::string verdictListText(const std::vector<std::string>& list) {
  if (list.empty()) return "";
  return nlohmann::json(list).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> verdictListFrom(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

// The worker of WORKER/NIC.
std::string verdictHostOf(const std::string& endpoint) {
  return endpoint.substr(0, endpoint.find('/'));
}

int bindVerdictText(sqlite3_stmt* s, int i, const std::string& v) {
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

// A value that is not finite is stored as NULL and reads back as 0 (as the JSON report did).
int bindVerdictDouble(sqlite3_stmt* s, int i, double v) {
  return std::isfinite(v) ? sqlite3_bind_double(s, i, v) : sqlite3_bind_null(s, i);
}

int bindVerdictRow(sqlite3_stmt* s, const std::string& sweep_id, const VerdictRecord& v) {
  int rc = bindVerdictText(s, 1, sweep_id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, static_cast<int64_t>(v.seq));
  int col = 3;
  const std::string src_host = verdictHostOf(v.src), dst_host = verdictHostOf(v.dst);
  for (const std::string* text : {&v.test_id, &v.src, &v.dst, &src_host, &dst_host}) {
    if (rc == SQLITE_OK) rc = bindVerdictText(s, col, *text);
    ++col;
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 8, toString(v.op), -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 9, toString(v.mode), -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 10, static_cast<int64_t>(v.message_size));
  if (rc == SQLITE_OK) rc = bindVerdictText(s, 11, v.verdict);
  if (rc == SQLITE_OK) rc = bindVerdictDouble(s, 12, v.value);
  if (rc == SQLITE_OK) rc = bindVerdictText(s, 13, v.unit);
  if (rc == SQLITE_OK) rc = bindVerdictText(s, 14, v.topo_class);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 15, v.retest ? 1 : 0);
  if (rc == SQLITE_OK) rc = bindVerdictText(s, 16, verdictListText(v.reasons));
  return rc;
}

constexpr const char* kVerdictColumns =
    "seq, test_id, src, dst, op, mode, message_size, verdict, value, unit, topo_class, retest, "
    "reasons";

VerdictRecord readVerdictRow(sqlite3_stmt* s) {
  VerdictRecord v;
  v.seq = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  v.test_id = columnText(s, 1);
  v.src = columnText(s, 2);
  v.dst = columnText(s, 3);
  v.op = parseOp(columnText(s, 4)).value_or(Op::kWrite);
  v.mode = parseMode(columnText(s, 5)).value_or(Mode::kBandwidth);
  v.message_size = static_cast<uint64_t>(sqlite3_column_int64(s, 6));
  v.verdict = columnText(s, 7);
  v.value = sqlite3_column_double(s, 8);  // NULL reads as 0.0
  v.unit = columnText(s, 9);
  v.topo_class = columnText(s, 10);
  v.retest = sqlite3_column_int(s, 11) != 0;
  v.reasons = verdictListFrom(columnText(s, 12));
  return v;
}

Status checkVerdictQuery(const VerdictQuery& q) {
  if (q.sweep_id.empty()) {
    return invalidArgument("verdict query: sweep_id is empty", "name the sweep whose verdicts");
  }
  if (!q.verdict.empty() && q.verdict != "PASS" && q.verdict != "FAIL" && q.verdict != "SKIP") {
    return invalidArgument("verdict query: verdict '" + q.verdict + "' is not a verdict",
                           "pass PASS, FAIL, SKIP or \"\" for any");
  }
  return Status();
}

// The table (with the index it is read by), the WHERE clause of a verdict query and the name
// of its cached statement. The index is named (INDEXED BY): without statistics (the coordinator
// never runs ANALYZE) SQLite walks a whole sweep by its primary key, which gives seq order,
// rather than the few rows an index finds. The verdict is written into the SQL (one of three
// checked words), as the partial index of the failing verdicts requires.
struct VerdictWhere {
  std::string name;
  std::string from;
  std::string sql;
};

VerdictWhere verdictWhere(const VerdictQuery& q) {
  VerdictWhere w{"verdicts", "sweep_verdicts", " WHERE sweep_id = :sweep"};
  if (!q.verdict.empty()) {
    w.name += "+" + q.verdict;
    w.sql += " AND verdict = '" + q.verdict + "'";
  }
  if (!q.host.empty()) {
    // Either side: the seqs from each side's index, then the rows by primary key.
    w.name += "+host";
    w.sql +=
        " AND seq IN (SELECT seq FROM sweep_verdicts INDEXED BY sweep_verdicts_src WHERE "
        "sweep_id = :sweep AND src_host = :host UNION ALL SELECT seq FROM sweep_verdicts "
        "INDEXED BY sweep_verdicts_dst WHERE sweep_id = :sweep AND dst_host = :host)";
  }
  if (!q.src_host.empty()) {
    w.name += "+src";
    w.sql += " AND src_host = :src";
  }
  if (!q.dst_host.empty()) {
    w.name += "+dst";
    w.sql += " AND dst_host = :dst";
  }
  if (!q.host.empty()) return w;
  if (!q.src_host.empty()) {
    w.from += " INDEXED BY sweep_verdicts_src";
  } else if (!q.dst_host.empty()) {
    w.from += " INDEXED BY sweep_verdicts_dst";
  } else if (q.verdict == "FAIL") {
    w.from += " INDEXED BY sweep_verdicts_fail";
  }
  return w;
}

int bindVerdictWhere(sqlite3_stmt* s, const VerdictQuery& q) {
  int rc = bindVerdictText(s, sqlite3_bind_parameter_index(s, ":sweep"), q.sweep_id);
  const std::pair<const char*, const std::string*> params[] = {
      {":host", &q.host}, {":src", &q.src_host}, {":dst", &q.dst_host}};
  for (const auto& [name, value] : params) {
    const int i = sqlite3_bind_parameter_index(s, name);
    if (rc == SQLITE_OK && i > 0) rc = bindVerdictText(s, i, *value);
  }
  return rc;
}

std::string verdictsSql(const VerdictQuery& q) {
  const VerdictWhere w = verdictWhere(q);
  return std::string("SELECT ") + kVerdictColumns + " FROM " + w.from + w.sql +
         " ORDER BY seq LIMIT :limit OFFSET :offset";
}

}  // namespace

Status SqliteStore::writeInTransaction(const std::function<Status()>& body) {
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_RETURN_IF_ERROR(begin());
  Status st = body();
  if (!st.ok()) {
    rollbackQuietly();
    return st;
  }
  return commit();
}

Status SqliteStore::sweepMustExist(const std::string& sweep_id, const std::string& fix) {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(writer_, "sweep_exists", "SELECT 1 FROM sweeps WHERE id = ?1"));
  StmtScope scope(s);
  int rc = bindVerdictText(s, 1, sweep_id);
  if (rc != SQLITE_OK) return error(writer_, rc, "sweep_exists (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    return notFound("sweep '" + sweep_id + "' is not stored in " + path_, fix);
  }
  if (rc != SQLITE_ROW) return error(writer_, rc, "sweep_exists");
  return Status();
}

Status SqliteStore::clearSweepReport(const std::string& sweep_id) {
  MutexLock lock(writer_.mu);
  return writeInTransaction([&]() -> Status {
    GDR_RETURN_IF_ERROR(sweepMustExist(sweep_id));
    // The summary first: a reader that finds no summary reads no report.
    for (const char* table :
         {"sweep_report_summary", "sweep_verdicts", "sweep_suspects", "sweep_notes"}) {
      const std::string name = std::string("clear_") + table;
      GDR_ASSIGN_OR_RETURN(
          sqlite3_stmt * s,
          statement(writer_, name, std::string("DELETE FROM ") + table + " WHERE sweep_id = ?1"));
      StmtScope scope(s);
      int rc = bindVerdictText(s, 1, sweep_id);
      if (rc == SQLITE_OK) rc = sqlite3_step(s);
      if (rc != SQLITE_DONE) return error(writer_, rc, name);
    }
    return Status();
  });
}

Status SqliteStore::insertVerdictRows(const std::string& sweep_id,
                                      const std::vector<VerdictRecord>& rows) {
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "insert_verdict",
                "INSERT INTO sweep_verdicts (sweep_id, seq, test_id, src, dst, src_host, dst_host, "
                "op, mode, message_size, verdict, value, unit, topo_class, retest, reasons) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"));
  for (const VerdictRecord& v : rows) {
    StmtScope scope(s);
    int rc = bindVerdictRow(s, sweep_id, v);
    if (rc != SQLITE_OK) return error(writer_, rc, "insert_verdict (bind)");
    rc = sqlite3_step(s);
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
      return invalidArgument(
          "sweep " + sweep_id + ": verdict seq " + std::to_string(v.seq) + " is already stored",
          "give each verdict of a report its own seq (clearSweepReport first "
          "to write a report again)");
    }
    if (rc != SQLITE_DONE) return error(writer_, rc, "insert_verdict");
  }
  return Status();
}

Status SqliteStore::appendSweepVerdicts(const std::string& sweep_id,
                                        const std::vector<VerdictRecord>& verdicts) {
  MutexLock lock(writer_.mu);
  return writeInTransaction([&]() -> Status {
    GDR_RETURN_IF_ERROR(sweepMustExist(sweep_id));
    return insertVerdictRows(sweep_id, verdicts);
  });
}

Status SqliteStore::insertSummaryRows(const std::string& sweep_id,
                                      const SweepReportSummary& summary) {
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * sus,
      statement(writer_, "insert_suspect",
                "INSERT INTO sweep_suspects (sweep_id, rank, kind, name, score, evidence) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  for (size_t i = 0; i < summary.suspects.size(); ++i) {
    const SuspectRecord& x = summary.suspects[i];
    StmtScope scope(sus);
    int rc = bindVerdictText(sus, 1, sweep_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(sus, 2, static_cast<int64_t>(i));
    if (rc == SQLITE_OK) rc = bindVerdictText(sus, 3, x.kind);
    if (rc == SQLITE_OK) rc = bindVerdictText(sus, 4, x.name);
    if (rc == SQLITE_OK) rc = bindVerdictDouble(sus, 5, x.score);
    if (rc == SQLITE_OK) rc = bindVerdictText(sus, 6, verdictListText(x.evidence));
    if (rc == SQLITE_OK) rc = sqlite3_step(sus);
    if (rc != SQLITE_DONE) return error(writer_, rc, "insert_suspect");
  }
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * note,
      statement(writer_, "insert_note",
                "INSERT INTO sweep_notes (sweep_id, seq, note) VALUES (?1, ?2, ?3)"));
  for (size_t i = 0; i < summary.notes.size(); ++i) {
    StmtScope scope(note);
    int rc = bindVerdictText(note, 1, sweep_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(note, 2, static_cast<int64_t>(i));
    if (rc == SQLITE_OK) rc = bindVerdictText(note, 3, summary.notes[i]);
    if (rc == SQLITE_OK) rc = sqlite3_step(note);
    if (rc != SQLITE_DONE) return error(writer_, rc, "insert_note");
  }
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * sum,
                       statement(writer_, "insert_report_summary",
                                 "INSERT INTO sweep_report_summary (sweep_id, figures_json) "
                                 "VALUES (?1, ?2)"));
  StmtScope scope(sum);
  int rc = bindVerdictText(sum, 1, sweep_id);
  if (rc == SQLITE_OK) rc = bindVerdictText(sum, 2, summary.figures_json);
  if (rc == SQLITE_OK) rc = sqlite3_step(sum);
  if (rc != SQLITE_DONE) return error(writer_, rc, "insert_report_summary");
  return Status();
}

Status SqliteStore::putSweepReportSummary(const std::string& sweep_id,
                                          const SweepReportSummary& summary) {
  MutexLock lock(writer_.mu);
  return writeInTransaction([&]() -> Status {
    GDR_RETURN_IF_ERROR(sweepMustExist(sweep_id));
    for (const char* table : {"sweep_report_summary", "sweep_suspects", "sweep_notes"}) {
      const std::string name = std::string("replace_") + table;
      GDR_ASSIGN_OR_RETURN(
          sqlite3_stmt * s,
          statement(writer_, name, std::string("DELETE FROM ") + table + " WHERE sweep_id = ?1"));
      StmtScope scope(s);
      int rc = bindVerdictText(s, 1, sweep_id);
      if (rc == SQLITE_OK) rc = sqlite3_step(s);
      if (rc != SQLITE_DONE) return error(writer_, rc, name);
    }
    return insertSummaryRows(sweep_id, summary);
  });
}

Result<std::optional<SweepReportSummary>> SqliteStore::sweepReportSummary(
    const std::string& sweep_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // One read transaction: the summary, suspects and notes of one snapshot.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "report_summary",
                "SELECT 0, 0, figures_json, NULL, NULL, NULL FROM sweep_report_summary WHERE "
                "sweep_id = ?1 UNION ALL SELECT 1, rank, kind, name, score, evidence FROM "
                "sweep_suspects WHERE sweep_id = ?1 UNION ALL SELECT 2, seq, note, NULL, NULL, "
                "NULL FROM sweep_notes WHERE sweep_id = ?1 ORDER BY 1, 2"));
  StmtScope scope(s);
  int rc = bindVerdictText(s, 1, sweep_id);
  if (rc != SQLITE_OK) return error(c, rc, "report_summary (bind)");
  std::optional<SweepReportSummary> out;
  SweepReportSummary sum;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const int part = sqlite3_column_int(s, 0);
    if (part == 0) {
      out.emplace();
      sum.figures_json = columnText(s, 2);
    } else if (part == 1) {
      sum.suspects.push_back({columnText(s, 2), columnText(s, 3), sqlite3_column_double(s, 4),
                              verdictListFrom(columnText(s, 5))});
    } else {
      sum.notes.push_back(columnText(s, 2));
    }
  }
  if (rc != SQLITE_DONE) return error(c, rc, "report_summary");
  if (out) *out = std::move(sum);
  return out;
}

Result<std::vector<VerdictRecord>> SqliteStore::sweepVerdicts(const VerdictQuery& query) {
  GDR_RETURN_IF_ERROR(checkVerdictQuery(query));
  const VerdictWhere where = verdictWhere(query);
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, where.name, verdictsSql(query)));
  StmtScope scope(s);
  int rc = bindVerdictWhere(s, query);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_int64(s, sqlite3_bind_parameter_index(s, ":limit"),
                            query.limit == 0 ? -1 : int64_t{query.limit});
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_int64(s, sqlite3_bind_parameter_index(s, ":offset"),
                            static_cast<int64_t>(std::min<uint64_t>(query.offset, INT64_MAX)));
  }
  if (rc != SQLITE_OK) return error(c, rc, where.name + " (bind)");
  std::vector<VerdictRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.push_back(readVerdictRow(s));
  if (rc != SQLITE_DONE) return error(c, rc, where.name);
  return out;
}

Result<uint64_t> SqliteStore::countSweepVerdicts(const VerdictQuery& query) {
  GDR_RETURN_IF_ERROR(checkVerdictQuery(query));
  const VerdictWhere where = verdictWhere(query);
  const std::string name = "count_" + where.name;
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, name, "SELECT count(*) FROM " + where.from + where.sql));
  StmtScope scope(s);
  int rc = bindVerdictWhere(s, query);
  if (rc != SQLITE_OK) return error(c, rc, name + " (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) return error(c, rc, name);
  return static_cast<uint64_t>(sqlite3_column_int64(s, 0));
}

Result<std::vector<std::string>> SqliteStore::explainSweepVerdictsForTesting(
    const VerdictQuery& query) {
  GDR_RETURN_IF_ERROR(checkVerdictQuery(query));
  return explain("explain " + verdictWhere(query).name, verdictsSql(query));
}

}  // namespace gdrmesh
