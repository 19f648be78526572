// `gdrmesh certs`: the cluster's certificates (security/certs.h, docs/security.md).
//   certs init  --dir D                                   a cluster CA: D/ca.pem, D/ca.key
//   certs issue --dir D --role R --name N [--san ...]     D/N/{ca.pem,cert.pem,key.pem}
//   certs show  FILE                                      role, name and validity of a cert
//   certs revoke --dir D FILE                             add FILE's serial to D/crl.pem
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/cli.h"
#include "common/units.h"
#include "security/certs.h"

namespace gdrmesh::cli {
namespace {

struct CertsArgs {
  std::string dir;
  std::string role;
  std::string name;
  std::vector<std::string> sans;
  std::string out;
  std::string file;
  int days = 0;
  bool force = false;
};

int runInit(const CertsArgs& a) {
  CaOptions o;
  o.dir = a.dir;
  if (a.days > 0) o.days = a.days;
  o.force = a.force;
  Status st = initCa(o);
  if (!st.ok()) {
    std::fprintf(stderr, "gdrmesh certs init: %s\n", st.toString().c_str());
    return kExitUsage;
  }
  std::printf(
      "cluster CA written: %s/ca.pem, %s/ca.key (keep ca.key secret and off the "
      "cluster's hosts)\n",
      a.dir.c_str(), a.dir.c_str());
  return kExitOk;
}

int runIssue(const CertsArgs& a) {
  auto role = parseRole(a.role, "--role");
  if (!role.ok()) {
    std::fprintf(stderr, "gdrmesh certs issue: %s\n", role.status().toString().c_str());
    return kExitUsage;
  }
  IssueOptions o;
  o.ca_dir = a.dir;
  o.role = *role;
  o.name = a.name;
  o.sans = a.sans;
  if (a.days > 0) o.days = a.days;
  o.out_dir = a.out;
  o.force = a.force;
  auto out = issueCertificate(o);
  if (!out.ok()) {
    std::fprintf(stderr, "gdrmesh certs issue: %s\n", out.status().toString().c_str());
    return kExitUsage;
  }
  std::printf(
      "%s certificate for '%s' written to %s/ (cert.pem, key.pem, ca.pem): use it with "
      "--tls-dir %s\n",
      a.role.c_str(), a.name.c_str(), out->c_str(), out->c_str());
  return kExitOk;
}

int runShow(const CertsArgs& a) {
  std::ifstream f(a.file);
  if (!f) {
    std::fprintf(stderr, "gdrmesh certs show: FILE %s: cannot read the file\n", a.file.c_str());
    return kExitUsage;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto info = parseCertificate(ss.str(), a.file);
  if (!info.ok()) {
    std::fprintf(stderr, "gdrmesh certs show: %s\n", info.status().toString().c_str());
    return kExitUsage;
  }
  std::printf(
      "role:       %s\nname:       %s\nsubject:    %s\nissuer:     %s\nnot before: %s\n"
      "not after:  %s\nserial:     %s\n",
      toString(info->identity.role), info->identity.name.c_str(), info->subject.c_str(),
      info->issuer.c_str(), formatRfc3339(info->not_before_ms).c_str(),
      formatRfc3339(info->not_after_ms).c_str(), info->serial.c_str());
  return kExitOk;
}

int runRevoke(const CertsArgs& a) {
  RevokeOptions o;
  o.ca_dir = a.dir;
  o.cert_file = a.file;
  if (a.days > 0) o.days = a.days;
  auto out = revokeCertificate(o);
  if (!out.ok()) {
    std::fprintf(stderr, "gdrmesh certs revoke: %s\n", out.status().toString().c_str());
    return kExitUsage;
  }
  std::printf(
      "%s (serial %s) %s: %s lists %zu revoked certificate(s). Copy it to the coordinator's "
      "--crl path; the coordinator reads it again when it changes.\n",
      out->revoked.identity.describe().c_str(), out->revoked.serial.c_str(),
      out->already ? "was revoked already" : "revoked", out->crl_path.c_str(), out->entries);
  return kExitOk;
}

}  // namespace

void registerCertsCommands(CLI::App& app, Action* action) {
  auto* certs = app.add_subcommand("certs", "Cluster CA and certificates for mutual TLS");
  certs->require_subcommand(1);
  {
    auto* cmd = certs->add_subcommand("init", "Create the cluster CA (ECDSA P-256)");
    auto a = std::make_shared<CertsArgs>();
    cmd->add_option("--dir", a->dir, "folder for ca.pem and ca.key (0600)")->required();
    cmd->add_option("--days", a->days, "validity in days (default 3650)")
        ->check(CLI::Range(1, 36500));
    cmd->add_flag("--force", a->force, "replace an existing CA (its certificates stop working)");
    cmd->callback([action, a] { *action = [a] { return runInit(*a); }; });
  }
  {
    auto* cmd = certs->add_subcommand(
        "issue", "Issue a certificate: coordinator, worker, simulator, admin or reader");
    auto a = std::make_shared<CertsArgs>();
    cmd->add_option("--dir", a->dir, "the CA folder of `certs init`")->required();
    cmd->add_option("--role", a->role,
                    "coordinator | worker | simulator (--simulate workers) | admin | reader")
        ->required();
    cmd->add_option("--name", a->name,
                    "the identity: a worker's name, the coordinator's host name, a simulator's "
                    "--name-prefix, a user")
        ->required();
    cmd->add_option("--san", a->sans,
                    "extra host names / IP addresses the coordinator is reached at "
                    "(comma-separated)")
        ->delimiter(',');
    cmd->add_option("--days", a->days, "validity in days (default 365)")
        ->check(CLI::Range(1, 3650));
    cmd->add_option("--out", a->out, "output folder (default DIR/NAME)");
    cmd->add_flag("--force", a->force, "overwrite an existing certificate in the output folder");
    cmd->callback([action, a] { *action = [a] { return runIssue(*a); }; });
  }
  {
    auto* cmd = certs->add_subcommand("show", "Role, name and validity of a certificate");
    auto a = std::make_shared<CertsArgs>();
    cmd->add_option("FILE", a->file, "a PEM certificate (cert.pem)")->required();
    cmd->callback([action, a] { *action = [a] { return runShow(*a); }; });
  }
  {
    auto* cmd = certs->add_subcommand(
        "revoke", "Revoke a certificate: add its serial to the CA's revocation list (crl.pem)");
    auto a = std::make_shared<CertsArgs>();
    cmd->add_option("--dir", a->dir, "the CA folder of `certs init` (crl.pem is written there)")
        ->required();
    cmd->add_option("FILE", a->file, "the certificate to revoke (a node's cert.pem)")->required();
    cmd->add_option("--days", a->days, "the list's validity (nextUpdate) in days (default 30)")
        ->check(CLI::Range(1, 3650));
    cmd->callback([action, a] { *action = [a] { return runRevoke(*a); }; });
  }
}

}  // namespace gdrmesh::cli
