#include "coordinator/http/http_auth.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "security/policy.h"

namespace gdrmesh {
namespace {

constexpr const char* kTokenFix =
    "write a random token of at least 16 characters into the file, e.g. "
    "`openssl rand -hex 32 > FILE && chmod 600 FILE`";

bool tokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '~' ||
         c == '+' || c == '/' || c == '=' || c == '-';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

HttpAuthReply unauthorized(const std::string& why) {
  HttpAuthReply r;
  r.status = 401;
  r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"gdrmesh status page\"");
  r.body = "401 unauthorized: " + why +
           ".\nThe gdrmesh status page needs its reader token (the file given to the "
           "coordinator's --http-token-file): send `Authorization: Bearer TOKEN` (curl -H "
           "\"Authorization: Bearer $(cat FILE)\" ...), or open /login?token=TOKEN once in a "
           "browser to set its cookie.\n";
  return r;
}

}  // namespace

bool constantTimeEquals(std::string_view expected, std::string_view given) {
  // Every byte of `expected` is looked at, whatever `given` holds; a length difference is
  // folded into the same accumulator.
  unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(static_cast<unsigned char>(expected[i]) ^ g);
  }
  return diff == 0;
}

std::optional<std::string> bearerToken(std::string_view authorization) {
  std::string_view a = trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (a.size() <= kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != kScheme[i]) return std::nullopt;
  }
  if (a[kScheme.size()] != ' ' && a[kScheme.size()] != '\t') return std::nullopt;
  return std::string(trim(a.substr(kScheme.size())));
}

std::optional<std::string> cookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t semi = header.find(';');
    std::string_view pair = trim(header.substr(0, semi));
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    if (trim(pair.substr(0, eq)) != name) continue;
    std::string_view v = trim(pair.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return std::string(v);
  }
  return std::nullopt;
}

Result<HttpTokenGate> HttpTokenGate::fromToken(std::string token, const std::string& source) {
  if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes) {
    return invalidArgument(source + ": the token is " + std::to_string(token.size()) +
                               " characters long; it must have " + std::to_string(kMinTokenBytes) +
                               " to " + std::to_string(kMaxTokenBytes),
                           kTokenFix);
  }
  if (!std::all_of(token.begin(), token.end(), tokenChar)) {
    return invalidArgument(
        source + ": the token holds a character outside A-Z a-z 0-9 . _ ~ + / = -", kTokenFix);
  }
  return HttpTokenGate(std::move(token));
}

Result<HttpTokenGate> HttpTokenGate::fromFile(const std::string& path) {
  const std::string field = "--http-token-file " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return invalidArgument(field + ": cannot read the file (missing, or not a regular file)",
                           kTokenFix);
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return invalidArgument(field + ": the file is readable by group or others (mode " + mode +
                               "): whoever reads it can read the cluster's results",
                           "chmod 600 " + path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalidArgument(field + ": cannot open the file", "check its permissions");
  std::string line;
  std::getline(in, line);
  std::string_view t = line;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back())) != 0) t.remove_suffix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front())) != 0) t.remove_prefix(1);
  return fromToken(std::string(t), field);
}

std::optional<HttpAuthReply> HttpTokenGate::check(const HttpAuthRequest& request) const {
  if (request.path == "/login") {
    if (request.token_count != 1 || !request.login_token) {
      HttpAuthReply r;
      r.status = 400;
      r.body =
          "400 bad request: /login takes exactly one `token` parameter: open "
          "/login?token=TOKEN with the token from the coordinator's --http-token-file.\n";
      return r;
    }
    if (!constantTimeEquals(token_, *request.login_token)) {
      return unauthorized("the token given to /login is not this page's token");
    }
    HttpAuthReply r;
    r.status = 303;
    r.headers.emplace_back("Location", "/");
    r.headers.emplace_back(
        "Set-Cookie", std::string(kCookie) + "=" + token_ + "; Path=/; HttpOnly; SameSite=Strict");
    r.body = "logged in: continue to /\n";
    return r;
  }
  bool presented = false;
  if (!request.authorization.empty()) {
    presented = true;
    auto bearer = bearerToken(request.authorization);
    if (bearer && constantTimeEquals(token_, *bearer)) return std::nullopt;
  }
  if (auto c = cookieValue(request.cookie, kCookie)) {
    presented = true;
    if (constantTimeEquals(token_, *c)) return std::nullopt;
  }
  return unauthorized(presented ? "the token given does not match this page's token"
                                : "no token given");
}

Status checkHttpExposure(const std::string& host_port, bool has_token, bool allow_anonymous) {
  const std::string host = listenHost(host_port);
  if (has_token || allow_anonymous || isLoopbackHost(host)) return {};
  return invalidArgument(
      "--http " + host_port + ": refusing to serve the status page without authentication on '" +
          host +
          "', which is not a loopback address: whoever reaches it would read every worker, "
          "result and sweep",
      "give a reader token with --http-token-file FILE (docs/security.md), bind it to "
      "127.0.0.1, or serve it to anyone with --http-allow-anonymous");
}

}  // namespace gdrmesh
