#include "coordinator/orchestrator/cron.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "common/units.h"

namespace gdrmesh {

namespace {

// ---- Civil calendar (proleptic Gregorian; Howard Hinnant's algorithms) ----

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t ceilDiv(int64_t a, int64_t b) {
  return -floorDiv(-a, b);
}

int64_t daysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = floorDiv(y, 400);
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct Civil {
  int64_t year;
  int month;
  int day;
};

Civil civilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = floorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return Civil{yoe + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

int weekdayOf(int64_t days) {  // 1970-01-01 was a Thursday (4)
  return static_cast<int>(days + 4 - floorDiv(days + 4, 7) * 7);
}

bool isLeap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int daysInMonth(int64_t y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && isLeap(y) ? 29 : kDays[m - 1];
}

int64_t yearOf(int64_t unix_s) {
  return civilFromDays(floorDiv(unix_s, 86400)).year;
}

// ---- Cron fields ----

const char* const kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                   "jul", "aug", "sep", "oct", "nov", "dec"};
const char* const kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

struct FieldSpec {
  const char* name;
  int lo;
  int hi;
  const char* const* names;  // nullptr = numbers only
  int names_count;
  int names_base;         // value of names[0]
  const char* expecting;  // "a number 0-59"
};

const FieldSpec kFields[5] = {
    {"minute", 0, 59, nullptr, 0, 0, "a number 0-59"},
    {"hour", 0, 23, nullptr, 0, 0, "a number 0-23"},
    {"day-of-month", 1, 31, nullptr, 0, 0, "a number 1-31"},
    {"month", 1, 12, kMonthNames, 12, 1, "a number 1-12 or a name jan-dec"},
    {"day-of-week", 0, 7, kDayNames, 7, 0, "a number 0-7 (0 and 7 are Sunday) or a name sun-sat"},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool allDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

class FieldParser {
 public:
  FieldParser(const std::string& expr, const FieldSpec& spec) : expr_(expr), spec_(spec) {}

  Status parse(const std::string& field, uint64_t* bits) {
    *bits = 0;
    size_t start = 0;
    for (;;) {
      const size_t comma = field.find(',', start);
      const std::string item =
          field.substr(start, comma == std::string::npos ? comma : comma - start);
      if (item.empty()) {
        return error("'" + field + "' has an empty list item",
                     "separate values with single commas, e.g. '1,15,30'");
      }
      GDR_RETURN_IF_ERROR(parseItem(item, bits));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return Status::okStatus();
  }

 private:
  Status error(const std::string& what, const std::string& fix = {}) const {
    return invalidArgument("cron '" + expr_ + "': " + spec_.name + " " + what, fix);
  }

  Result<int> value(const std::string& text) const {
    if (allDigits(text)) {
      if (text.size() > 4) return error("'" + text + "' is out of range " + range());
      const int v = std::stoi(text);
      if (v < spec_.lo || v > spec_.hi) return error("'" + text + "' is out of range " + range());
      return v;
    }
    if (spec_.names != nullptr) {
      const std::string l = lower(text);
      for (int i = 0; i < spec_.names_count; ++i) {
        if (l == spec_.names[i]) return spec_.names_base + i;
      }
    }
    return error("'" + text + "' is not " + spec_.expecting);
  }

  std::string range() const { return std::to_string(spec_.lo) + "-" + std::to_string(spec_.hi); }

  Status parseItem(const std::string& item, uint64_t* bits) {
    const size_t slash = item.find('/');
    const std::string base = item.substr(0, slash);
    int step = 1;
    if (slash != std::string::npos) {
      const std::string step_text = item.substr(slash + 1);
      const int max_step = spec_.hi - spec_.lo + 1;
      if (!allDigits(step_text) || step_text.size() > 4 || std::stoi(step_text) < 1 ||
          std::stoi(step_text) > max_step) {
        return error("'" + item + "': step '" + step_text + "' is not a number 1-" +
                     std::to_string(max_step));
      }
      step = std::stoi(step_text);
    }
    int lo = 0;
    int hi = 0;
    if (base == "*") {
      lo = spec_.lo;
      hi = spec_.hi;
    } else {
      const size_t dash = base.find('-');
      if (dash == std::string::npos) {
        GDR_ASSIGN_OR_RETURN(lo, value(base));
        if (slash != std::string::npos) {
          return error("'" + item + "': a step needs a range or '*'",
                       "write '" + base + "-" + std::to_string(spec_.hi) + "/" +
                           std::to_string(step) + "' (from " + base + " to the end)");
        }
        hi = lo;
      } else {
        const std::string a = base.substr(0, dash);
        const std::string b = base.substr(dash + 1);
        if (a.empty() || b.empty()) {
          return error("'" + item + "' is not a range: write 'FIRST-LAST', e.g. '" +
                       std::to_string(spec_.lo) + "-" + std::to_string(spec_.lo + 1) + "'");
        }
        GDR_ASSIGN_OR_RETURN(lo, value(a));
        GDR_ASSIGN_OR_RETURN(hi, value(b));
        if (lo > hi && hi == 0 && spec_.hi == 7) {
          return error("range '" + base + "' runs backwards; ranges do not wrap",
                       "write '" + a + "-7' (7 is Sunday too)");
        }
        if (lo > hi) {
          return error("range '" + base + "' runs backwards; ranges do not wrap",
                       "split it, e.g. '" + a + "-" + std::to_string(spec_.hi) + "," +
                           std::to_string(spec_.lo) + "-" + b + "'");
        }
      }
    }
    for (int v = lo; v <= hi; v += step) *bits |= uint64_t{1} << v;
    return Status::okStatus();
  }

  const std::string& expr_;
  const FieldSpec& spec_;
};

std::vector<std::string> splitFields(const std::string& text) {
  std::istringstream in(text);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

// The first civil minute (minutes since 1970-01-01 00:00 local) in [lo, hi) that matches.
std::optional<int64_t> nextMatchCivil(const CronExpr& e, int64_t lo, int64_t hi) {
  int64_t day = floorDiv(lo, 1440);
  int mod = static_cast<int>(lo - day * 1440);
  while (day * 1440 < hi) {
    const Civil c = civilFromDays(day);
    if (((e.months >> c.month) & 1u) == 0) {
      day = c.month == 12 ? daysFromCivil(c.year + 1, 1, 1) : daysFromCivil(c.year, c.month + 1, 1);
      mod = 0;
      continue;
    }
    if (e.matchesDay(c.month, c.day, weekdayOf(day))) {
      for (int h = mod / 60; h < 24; ++h) {
        if (((e.hours >> h) & 1u) == 0) continue;
        const int from = h == mod / 60 ? mod % 60 : 0;
        const uint64_t m = e.minutes & (~uint64_t{0} << from);
        if (m != 0) {
          const int64_t found = day * 1440 + static_cast<int64_t>(h) * 60 + __builtin_ctzll(m);
          if (found < hi) return found;
          return std::nullopt;
        }
      }
    }
    ++day;
    mod = 0;
  }
  return std::nullopt;
}

// ---- POSIX TZ strings ("CET-1CEST,M3.5.0,M10.5.0/3") ----

class PosixParser {
 public:
  PosixParser(const std::string& zone, const std::string& tz) : zone_(zone), tz_(tz) {}

  Result<TimeZone::PosixRule> parse() {
    TimeZone::PosixRule r;
    if (!name()) return bad("a zone abbreviation");
    int32_t std_west = 0;
    if (!offset(&std_west, 24)) return bad("the standard UTC offset");
    r.std_offset_s = -std_west;
    if (pos_ == tz_.size()) return r;
    if (!name()) return bad("a daylight-saving abbreviation");
    r.has_dst = true;
    r.dst_offset_s = r.std_offset_s + 3600;
    if (pos_ < tz_.size() && tz_[pos_] != ',') {
      int32_t dst_west = 0;
      if (!offset(&dst_west, 24)) return bad("the daylight-saving UTC offset");
      r.dst_offset_s = -dst_west;
    }
    if (pos_ == tz_.size()) {
      // POSIX leaves the default rule to the implementation; glibc uses the US rule.
      r.start = TimeZone::DateRule{TimeZone::DateRule::kMonthWeekDay, 0, 3, 2, 7200};
      r.end = TimeZone::DateRule{TimeZone::DateRule::kMonthWeekDay, 0, 11, 1, 7200};
      return r;
    }
    if (!expect(',') || !date(&r.start)) return bad("the daylight-saving start rule");
    if (!expect(',') || !date(&r.end)) return bad("the daylight-saving end rule");
    if (pos_ != tz_.size()) return bad("the end of the string");
    return r;
  }

 private:
  Status bad(const std::string& wanted) const {
    return invalidArgument("time zone '" + zone_ + "': its POSIX TZ rule '" + tz_ +
                               "' is malformed (expected " + wanted + " at character " +
                               std::to_string(pos_ + 1) + ")",
                           "reinstall or update the tzdata package");
  }
  bool expect(char c) {
    if (pos_ < tz_.size() && tz_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool name() {
    if (expect('<')) {
      const size_t end = tz_.find('>', pos_);
      if (end == std::string::npos || end == pos_) return false;
      pos_ = end + 1;
      return true;
    }
    const size_t start = pos_;
    while (pos_ < tz_.size() && std::isalpha(static_cast<unsigned char>(tz_[pos_]))) ++pos_;
    return pos_ - start >= 3;
  }
  bool number(int* out, int max) {
    const size_t start = pos_;
    int v = 0;
    while (pos_ < tz_.size() && std::isdigit(static_cast<unsigned char>(tz_[pos_]))) {
      v = v * 10 + (tz_[pos_] - '0');
      if (v > max) return false;
      ++pos_;
    }
    *out = v;
    return pos_ > start;
  }
  // [+-]hh[:mm[:ss]], as seconds in the string's sign convention.
  bool offset(int32_t* out, int max_hours) {
    int sign = 1;
    if (expect('-')) {
      sign = -1;
    } else {
      expect('+');
    }
    int h = 0, m = 0, s = 0;
    if (!number(&h, max_hours)) return false;
    if (expect(':')) {
      if (!number(&m, 59)) return false;
      if (expect(':') && !number(&s, 59)) return false;
    }
    *out = sign * (h * 3600 + m * 60 + s);
    return true;
  }
  bool date(TimeZone::DateRule* d) {
    if (expect('J')) {
      d->kind = TimeZone::DateRule::kJulianNoLeap;
      if (!number(&d->day, 365) || d->day < 1) return false;
    } else if (expect('M')) {
      d->kind = TimeZone::DateRule::kMonthWeekDay;
      if (!number(&d->month, 12) || d->month < 1 || !expect('.')) return false;
      if (!number(&d->week, 5) || d->week < 1 || !expect('.')) return false;
      if (!number(&d->day, 6)) return false;
    } else {
      d->kind = TimeZone::DateRule::kZeroBased;
      if (!number(&d->day, 365)) return false;
    }
    d->time_s = 7200;
    if (expect('/')) {
      // RFC 8536 extends the hour to -167..167.
      if (!offset(&d->time_s, 167)) return false;
    }
    return true;
  }

  const std::string& zone_;
  const std::string& tz_;
  size_t pos_ = 0;
};

int64_t ruleDay(int64_t year, const TimeZone::DateRule& d) {
  const int64_t jan1 = daysFromCivil(year, 1, 1);
  switch (d.kind) {
    case TimeZone::DateRule::kJulianNoLeap:
      return jan1 + d.day - 1 + (isLeap(year) && d.day >= 60 ? 1 : 0);
    case TimeZone::DateRule::kZeroBased:
      return jan1 + d.day;
    case TimeZone::DateRule::kMonthWeekDay:
      break;
  }
  const int64_t first = daysFromCivil(year, d.month, 1);
  int64_t day = first + (d.day - weekdayOf(first) + 7) % 7 + static_cast<int64_t>(d.week - 1) * 7;
  while (day >= first + daysInMonth(year, d.month)) day -= 7;
  return day;
}

// ---- TZif ----

class TzifReader {
 public:
  explicit TzifReader(const std::string& b) : b_(b) {}
  bool has(size_t n) const { return pos_ <= b_.size() && b_.size() - pos_ >= n; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(b_[pos_++]);
    return v;
  }
  int64_t i64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(b_[pos_++]);
    return static_cast<int64_t>(v);
  }
  uint8_t u8() { return static_cast<unsigned char>(b_[pos_++]); }
  void skip(size_t n) { pos_ += n; }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

struct TzifHeader {
  char version = 0;
  uint32_t isutcnt = 0, isstdcnt = 0, leapcnt = 0, timecnt = 0, typecnt = 0, charcnt = 0;
};

bool readHeader(TzifReader& r, const std::string& bytes, TzifHeader* h) {
  if (!r.has(44) || bytes.compare(r.pos(), 4, "TZif") != 0) return false;
  r.skip(4);
  h->version = static_cast<char>(r.u8());
  r.skip(15);
  h->isutcnt = r.u32();
  h->isstdcnt = r.u32();
  h->leapcnt = r.u32();
  h->timecnt = r.u32();
  h->typecnt = r.u32();
  h->charcnt = r.u32();
  constexpr uint32_t kMax = 1u << 20;
  return h->typecnt >= 1 && h->typecnt <= 256 && h->timecnt < kMax && h->leapcnt < kMax &&
         h->charcnt < kMax && (h->isutcnt == 0 || h->isutcnt == h->typecnt) &&
         (h->isstdcnt == 0 || h->isstdcnt == h->typecnt);
}

size_t bodySize(const TzifHeader& h, size_t time_size) {
  return h.timecnt * (time_size + 1) + size_t{h.typecnt} * 6 + h.charcnt +
         h.leapcnt * (time_size + 4) + h.isstdcnt + h.isutcnt;
}

bool validZoneName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name.front() == '/') return false;
  size_t start = 0;
  for (;;) {
    const size_t slash = name.find('/', start);
    const std::string part = name.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (char c : part) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '+' &&
          c != '.') {
        return false;
      }
    }
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

}  // namespace

bool CronExpr::matchesDay(int month, int day, int weekday) const {
  if (((months >> month) & 1u) == 0) return false;
  const bool dm = ((days >> day) & 1u) != 0;
  const bool wm = ((weekdays >> weekday) & 1u) != 0;
  return (days_star || weekdays_star) ? (dm && wm) : (dm || wm);
}

Result<CronExpr> parseCron(const std::string& text) {
  std::vector<std::string> fields = splitFields(text);
  const std::string example = "e.g. '0 2 * * *' for 02:00 every day";
  if (fields.size() == 1 && fields[0][0] == '@') {
    static const std::pair<const char*, const char*> kMacros[] = {
        {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
        {"@weekly", "0 0 * * 0"},  {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
        {"@annually", "0 0 1 1 *"}};
    const std::string macro = lower(fields[0]);
    for (const auto& [name, expansion] : kMacros) {
      if (macro == name) {
        auto parsed = parseCron(expansion);
        if (parsed.ok()) parsed->text = text;
        return parsed;
      }
    }
    if (macro == "@reboot") {
      return invalidArgument("cron '" + text + "': @reboot is not supported (schedules are times)",
                             "use a time, " + example);
    }
    return invalidArgument(
        "cron '" + text + "': unknown macro '" + fields[0] + "'",
        "use @hourly, @daily, @weekly, @monthly or @yearly, or 5 fields, " + example);
  }
  if (fields.size() != 5) {
    return invalidArgument(
        "cron '" + text +
            "': expected 5 fields (minute hour day-of-month month "
            "day-of-week), got " +
            std::to_string(fields.size()),
        fields.size() > 5 ? "seconds and year fields are not supported; " + example : example);
  }
  CronExpr e;
  e.text = text;
  uint64_t bits[5] = {};
  for (int i = 0; i < 5; ++i) {
    GDR_RETURN_IF_ERROR(FieldParser(text, kFields[i]).parse(fields[i], &bits[i]));
  }
  e.minutes = bits[0];
  e.hours = static_cast<uint32_t>(bits[1]);
  e.days = static_cast<uint32_t>(bits[2]);
  e.months = static_cast<uint16_t>(bits[3]);
  uint64_t dow = bits[4];
  if ((dow >> 7) & 1u) dow = (dow | 1u) & 0x7Fu;  // 7 = Sunday
  e.weekdays = static_cast<uint8_t>(dow);
  e.days_star = fields[2][0] == '*';
  e.weekdays_star = fields[4][0] == '*';
  if (e.days_star || e.weekdays_star) {
    // Both fields must match: some chosen day of the month must exist in some chosen month
    // (2000 is a leap year, so Feb 29 counts; every such date meets every weekday in time).
    bool possible = false;
    for (int m = 1; m <= 12 && !possible; ++m) {
      if (((e.months >> m) & 1u) == 0) continue;
      for (int d = 1; d <= daysInMonth(2000, m) && !possible; ++d) possible = (e.days >> d) & 1u;
    }
    if (!possible) {
      return invalidArgument("cron '" + text + "': day-of-month '" + fields[2] +
                                 "' never occurs in month '" + fields[3] +
                                 "', so the schedule would never run",
                             "choose a day that every chosen month has, e.g. 1-28");
    }
  }
  return e;
}

// ---- TimeZone ----

TimeZone TimeZone::utc() {
  TimeZone z;
  z.name_ = "UTC";
  return z;
}

Result<TimeZone> TimeZone::fromPosix(const std::string& name, const std::string& tz) {
  GDR_ASSIGN_OR_RETURN(PosixRule rule, PosixParser(name, tz).parse());
  TimeZone z;
  z.name_ = name;
  z.initial_offset_s_ = rule.std_offset_s;
  z.rule_ = rule;
  return z;
}

Result<TimeZone> TimeZone::fromTzif(const std::string& name, const std::string& bytes) {
  auto malformed = [&](const std::string& what) {
    return invalidArgument("time zone '" + name + "': not a valid TZif file (" + what + ")",
                           "reinstall or update the tzdata package");
  };
  TzifReader r(bytes);
  TzifHeader h;
  if (!readHeader(r, bytes, &h)) return malformed("bad header");
  size_t time_size = 4;
  if (h.version >= '2') {
    // Skip the 32-bit block; the 64-bit one follows with its own header.
    if (!r.has(bodySize(h, 4))) return malformed("truncated version 1 data");
    r.skip(bodySize(h, 4));
    if (!readHeader(r, bytes, &h)) return malformed("bad version 2 header");
    time_size = 8;
  }
  if (!r.has(bodySize(h, time_size))) return malformed("truncated data");
  std::vector<int64_t> times(h.timecnt);
  for (auto& t : times) t = time_size == 8 ? r.i64() : static_cast<int32_t>(r.u32());
  std::vector<uint8_t> idx(h.timecnt);
  for (auto& i : idx) {
    i = r.u8();
    if (i >= h.typecnt) return malformed("transition type out of range");
  }
  std::vector<int32_t> type_offsets(h.typecnt);
  for (auto& o : type_offsets) {
    o = static_cast<int32_t>(r.u32());
    r.skip(2);  // isdst, abbreviation index
    if (o < -26 * 3600 || o > 26 * 3600) return malformed("UTC offset out of range");
  }
  r.skip(h.charcnt + h.leapcnt * (time_size + 4) + h.isstdcnt + h.isutcnt);
  for (size_t i = 1; i < times.size(); ++i) {
    if (times[i] <= times[i - 1]) return malformed("transitions out of order");
  }

  TimeZone z;
  z.name_ = name;
  z.initial_offset_s_ = type_offsets[0];
  z.times_ = std::move(times);
  for (uint8_t i : idx) z.offsets_.push_back(type_offsets[i]);
  if (time_size == 8) {
    // Footer: "\n" TZ "\n"; an empty TZ means no rule (the last type holds forever).
    if (!r.has(1) || bytes[r.pos()] != '\n') return malformed("missing footer");
    const size_t end = bytes.find('\n', r.pos() + 1);
    if (end == std::string::npos) return malformed("unterminated footer");
    const std::string tz = bytes.substr(r.pos() + 1, end - r.pos() - 1);
    if (!tz.empty()) {
      GDR_ASSIGN_OR_RETURN(PosixRule rule, PosixParser(name, tz).parse());
      z.rule_ = rule;
      if (z.times_.empty()) z.initial_offset_s_ = rule.std_offset_s;
    }
  }
  return z;
}

Result<TimeZone> TimeZone::load(const std::string& name, const std::string& zoneinfo_dir) {
  if (name.empty() || name == "UTC") return utc();
  const std::string fix =
      "use an IANA zone name such as 'Europe/Berlin', 'America/New_York' or 'UTC' (the list: "
      "ls " +
      zoneinfo_dir + ", or timedatectl list-timezones)";
  if (!validZoneName(name)) {
    return invalidArgument("time zone '" + name + "' is not a zone name", fix);
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(zoneinfo_dir, ec)) {
    return failedPrecondition(
        "time zone '" + name + "': the zone database " + zoneinfo_dir + " is missing",
        "install the tzdata package (apt-get install tzdata)");
  }
  const std::string path = zoneinfo_dir + "/" + name;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return notFound("time zone '" + name + "' is unknown (no file " + path + ")", fix);
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes;
  char buf[4096];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    bytes.append(buf, static_cast<size_t>(in.gcount()));
  }
  if (in.bad() || (in.fail() && !in.eof())) {
    return failedPrecondition("time zone '" + name + "': cannot read " + path,
                              "check the file's permissions");
  }
  return fromTzif(name, bytes);
}

std::vector<TimeZone::Transition> TimeZone::ruleTransitions(int64_t year) const {
  std::vector<Transition> out;
  if (!rule_ || !rule_->has_dst) return out;
  const PosixRule& r = *rule_;
  const int64_t start = ruleDay(year, r.start) * 86400 + r.start.time_s - r.std_offset_s;
  const int64_t end = ruleDay(year, r.end) * 86400 + r.end.time_s - r.dst_offset_s;
  out.push_back({start, r.std_offset_s, r.dst_offset_s});
  out.push_back({end, r.dst_offset_s, r.std_offset_s});
  std::sort(out.begin(), out.end(),
            [](const Transition& a, const Transition& b) { return a.at_s < b.at_s; });
  return out;
}

std::optional<TimeZone::Transition> TimeZone::prevTransition(int64_t t) const {
  std::optional<Transition> found;
  const auto it = std::upper_bound(times_.begin(), times_.end(), t);
  if (it != times_.begin()) {
    const size_t i = static_cast<size_t>(it - times_.begin()) - 1;
    found = Transition{times_[i], i == 0 ? initial_offset_s_ : offsets_[i - 1], offsets_[i]};
  }
  if (rule_ && rule_->has_dst && (times_.empty() || t > times_.back())) {
    const int64_t y = yearOf(t);
    for (int64_t year = y - 1; year <= y + 1; ++year) {
      for (const Transition& tr : ruleTransitions(year)) {
        if (tr.at_s > t) continue;
        if (!times_.empty() && tr.at_s <= times_.back()) continue;
        if (!found || tr.at_s > found->at_s) found = tr;
      }
    }
  }
  return found;
}

std::optional<TimeZone::Transition> TimeZone::nextTransition(int64_t t) const {
  const auto it = std::upper_bound(times_.begin(), times_.end(), t);
  if (it != times_.end()) {
    const size_t i = static_cast<size_t>(it - times_.begin());
    return Transition{times_[i], i == 0 ? initial_offset_s_ : offsets_[i - 1], offsets_[i]};
  }
  if (rule_ && rule_->has_dst) {
    const int64_t from = times_.empty() ? t : std::max(t, times_.back());
    const int64_t y = yearOf(from);
    for (int64_t year = y - 1; year <= y + 2; ++year) {
      for (const Transition& tr : ruleTransitions(year)) {
        if (tr.at_s > from) return tr;
      }
    }
  }
  return std::nullopt;
}

int32_t TimeZone::offsetAt(int64_t t) const {
  if (const auto p = prevTransition(t)) return p->after_s;
  if (times_.empty() && rule_) return rule_->std_offset_s;
  return initial_offset_s_;
}

// ---- nextRun ----

Result<int64_t> nextRun(const CronExpr& expr, const TimeZone& zone, int64_t after_unix_ms) {
  // Candidate instants are whole seconds: x > after_ms <=> x > floor(after_ms / 1000).
  const int64_t after_s = floorDiv(after_unix_ms, 1000);
  const int64_t horizon = after_s + int64_t{50} * 366 * 86400;
  int64_t cur = after_s;  // looking for instants > cur
  while (cur < horizon) {
    // The stretch of constant offset [prev, next) that holds instant cur + 1.
    const auto prev = zone.prevTransition(cur + 1);
    const auto next = zone.nextTransition(cur + 1);
    const int32_t off = prev ? prev->after_s : zone.offsetAt(cur + 1);
    const int64_t end = next ? next->at_s : horizon;
    // Civil minute c is the instant c * 60 - off.
    int64_t lo = ceilDiv(cur + 1 + off, 60);
    if (prev && prev->before_s > prev->after_s && !expr.allHours()) {
      // Fall back: local times already seen before `prev` match only their first occurrence.
      lo = std::max(lo, ceilDiv(prev->at_s + prev->before_s, 60));
    }
    const int64_t hi = ceilDiv(end + off, 60);
    if (lo < hi) {
      if (const auto c = nextMatchCivil(expr, lo, hi)) return (*c * 60 - off) * 1000;
    }
    if (!next) break;
    if (next->after_s > next->before_s) {
      // Spring forward: local times in the gap run once, at the first instant after it.
      if (nextMatchCivil(expr, ceilDiv(next->at_s + next->before_s, 60),
                         ceilDiv(next->at_s + next->after_s, 60))) {
        return next->at_s * 1000;
      }
    }
    cur = next->at_s - 1;
  }
  return invalidArgument("cron '" + expr.text + "' in time zone '" + zone.name() +
                             "' has no run in the 50 years after " + formatRfc3339(after_unix_ms),
                         "check the day-of-month, month and day-of-week fields");
}

}  // namespace gdrmesh
