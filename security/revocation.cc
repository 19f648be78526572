#include "security/revocation.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/sync/mutex.h"
#include "common/units.h"

namespace gdrmesh {
namespace {

std::string describe(const RevocationList::Mark& m) {
  return (m.number ? "number " + std::to_string(*m.number) : std::string("no number")) +
         ", lastUpdate " + formatRfc3339(m.this_update_ms);
}

}  // namespace

RevocationList::RevocationList(std::string path, std::string ca_pem, Options options)
    : path_(std::move(path)), ca_pem_(std::move(ca_pem)), options_(std::move(options)) {}

RevocationList::FileStamp RevocationList::stamp(const std::string& path) {
  struct stat st {};
  FileStamp s;
  if (::stat(path.c_str(), &st) != 0) return s;
  s.inode = st.st_ino;
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  s.size = static_cast<int64_t>(st.st_size);
  return s;
}

bool RevocationList::older(const Mark& a, const Mark& b) {
  if (a.number && b.number) return *a.number < *b.number;
  return a.this_update_ms < b.this_update_ms;
}

Result<std::shared_ptr<RevocationList>> RevocationList::open(const std::string& path,
                                                             const std::string& ca_pem,
                                                             Options options) {
  std::shared_ptr<RevocationList> list(new RevocationList(path, ca_pem, std::move(options)));
  MutexLock lock(list->mu_);
  GDR_RETURN_IF_ERROR(list->readState());
  bool rolled_back = false;
  Status state_error;
  GDR_RETURN_IF_ERROR(list->load(&rolled_back, &state_error));
  GDR_RETURN_IF_ERROR(state_error);
  return list;
}

// The record is two lines, "crl_number=N" (absent when the list has none) and
// "this_update_ms=N", after a comment.
Status RevocationList::readState() {
  if (options_.state_path.empty()) return {};
  std::ifstream f(options_.state_path);
  if (!f) {
    if (stamp(options_.state_path).size < 0) return {};  // none yet: the first list is newest
    return Status(Code::kFailedPrecondition,
                  "--crl: cannot read " + options_.state_path +
                      " (the newest revocation list this coordinator has used)",
                  "make it readable by the coordinator");
  }
  Mark m;
  bool have_update = false;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    const std::string key = line.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
    try {
      size_t used = 0;
      if (key == "crl_number") {
        m.number = std::stoull(value, &used);
      } else if (key == "this_update_ms") {
        m.this_update_ms = std::stoll(value, &used);
        have_update = true;
      }
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      have_update = false;
      break;
    }
  }
  if (!have_update) {
    return Status(Code::kFailedPrecondition,
                  "--crl: " + options_.state_path +
                      " is not a record of the newest revocation list this coordinator has used",
                  "delete it if it is not gdrmesh's (the list given with --crl is then recorded "
                  "as the newest)");
  }
  newest_ = m;
  return {};
}

Status RevocationList::writeState() {
  if (options_.state_path.empty() || !newest_) return {};
  const std::string tmp = options_.state_path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << "# gdrmesh coordinator: the newest revocation list used with --crl " << path_
      << "; an older list is refused\n";
    if (newest_->number) f << "crl_number=" << *newest_->number << "\n";
    f << "this_update_ms=" << newest_->this_update_ms << "\n";
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return Status(Code::kFailedPrecondition,
                    "--crl: cannot record the newest revocation list in " + options_.state_path,
                    "make the database's folder writable by the coordinator");
    }
  }
  if (std::rename(tmp.c_str(), options_.state_path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status(Code::kFailedPrecondition,
                  "--crl: cannot record the newest revocation list in " + options_.state_path,
                  "make the database's folder writable by the coordinator");
  }
  return {};
}

Status RevocationList::load(bool* rolled_back, Status* state_error) {
  seen_ = stamp(path_);  // a broken or missing file is reported once, not on every call
  std::ifstream f(path_, std::ios::binary);
  if (!f) {
    return Status(Code::kFailedPrecondition, "--crl " + path_ + ": cannot read the file",
                  "give the crl.pem written by `gdrmesh certs revoke --dir CA_DIR`");
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto crl = loadCrl(ss.str(), ca_pem_, "--crl " + path_);
  if (!crl.ok()) return crl.status();
  const Mark m{crl->number, crl->this_update_ms};
  if (newest_ && older(m, *newest_)) {
    *rolled_back = true;
    return Status(
        Code::kFailedPrecondition,
        "--crl " + path_ + ": this revocation list (" + describe(m) +
            ") is older than one this coordinator has used (" + describe(*newest_) +
            (options_.state_path.empty() ? "" : ", recorded in " + options_.state_path) +
            "): an older list would re-admit certificates revoked since",
        "give the newest crl.pem (`gdrmesh certs revoke --dir CA_DIR` writes CA_DIR/crl.pem)" +
            (options_.state_path.empty()
                 ? std::string()
                 : "; only after replacing the cluster CA, delete " + options_.state_path));
  }
  std::set<std::string> serials(crl->serials.begin(), crl->serials.end());
  if (serials != serials_) {
    serials_ = std::move(serials);
    ++generation_;
  }
  if (!newest_ || older(*newest_, m)) {
    newest_ = m;
    *state_error = writeState();
  }
  return {};
}

void RevocationList::report(const std::string& line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "gdrmesh coordinator: %s\n", line.c_str());
  }
}

void RevocationList::refresh() {
  const FileStamp now = stamp(path_);
  if (now == seen_) return;
  if (now.size < 0) {
    seen_ = now;
    if (!missing_) {
      missing_ = true;
      report("revocation list " + path_ + " is missing; the " + std::to_string(serials_.size()) +
             " serials it revoked stay refused until the file is back");
    }
    return;
  }
  const bool was_missing = missing_;
  missing_ = false;
  bool rolled_back = false;
  Status state_error;
  Status st = load(&rolled_back, &state_error);
  if (rolled_back) {
    report("the revocation list was replaced by an older one, refused; the " +
           std::to_string(serials_.size()) +
           " revoked serials of the newer list stay in force: " + st.toString());
  } else if (!st.ok()) {
    report(std::string(was_missing ? "revocation list " + path_ + " is back"
                                   : "the revocation list changed") +
           " but does not load, keeping the " + std::to_string(serials_.size()) +
           " revoked serials read before: " + st.toString());
  } else {
    report("revocation list " + path_ + (was_missing ? " is back" : " read again") + ": " +
           std::to_string(serials_.size()) + " revoked");
  }
  if (!state_error.ok()) report(state_error.toString());
}

Status RevocationList::check(const CertInfo& cert) {
  MutexLock lock(mu_);
  refresh();
  if (serials_.count(cert.serial) == 0) return {};
  return Status(
      Code::kPermissionDenied,
      "the certificate of " + cert.identity.describe() + " (serial " + cert.serial + ") is revoked",
      "issue a new certificate: `gdrmesh certs issue --role " +
          std::string(toString(cert.identity.role)) + " --name " + cert.identity.name +
          " --force`");
}

uint64_t RevocationList::generation() {
  MutexLock lock(mu_);
  refresh();
  return generation_;
}

size_t RevocationList::size() {
  MutexLock lock(mu_);
  return serials_.size();
}

}  // namespace gdrmesh
