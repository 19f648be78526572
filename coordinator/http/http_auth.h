// The status page's reader token (docs/security.md, "The status page"). With a token set, every
// request must carry it: `Authorization: Bearer TOKEN`, or the `gdrmesh_token` cookie that
// `GET /login?token=TOKEN` sets (HttpOnly, SameSite=Strict) so that a browser can use the page.
// Anything else answers 401 with a plain message naming the fix.
//
// Pure: no sockets and no HTTP library; the server's one hook (http_auth_hook.h) hands each
// request's path, headers and `token` parameter to HttpTokenGate::check().
//
// Thread contract: an HttpTokenGate is immutable after construction; check() is thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gdrmesh {

// What the gate needs of one request.
struct HttpAuthRequest {
  std::string path;           // "/api/workers"; "/login" is the gate's own endpoint
  std::string authorization;  // the Authorization header, "" when absent
  std::string cookie;         // the Cookie header, "" when absent
  // /login: the `token` query parameter (nullopt when absent); `token_count` how often it came.
  std::optional<std::string> login_token;
  size_t token_count = 0;
};

// The gate's own answer to a request (it does not reach the page or the API).
struct HttpAuthReply {
  int status = 401;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpTokenGate {
 public:
  static constexpr const char* kCookie = "gdrmesh_token";
  static constexpr size_t kMinTokenBytes = 16;
  static constexpr size_t kMaxTokenBytes = 512;

  // A token of 16-512 characters from A-Z a-z 0-9 . _ ~ + / = - (hex or base64 fit). `source`
  // names where it came from, for errors.
  static Result<HttpTokenGate> fromToken(std::string token, const std::string& source);
  // The token file (--http-token-file): its first line, surrounding whitespace trimmed; the
  // file must not be readable by group or others (chmod 600).
  static Result<HttpTokenGate> fromFile(const std::string& path);

  // nullopt: the request carries the token, let it through. Otherwise the answer to send:
  // /login with the right token: 303 to / setting the cookie; anything else: 401 (400 for a
  // /login without exactly one token parameter).
  std::optional<HttpAuthReply> check(const HttpAuthRequest& request) const;

 private:
  explicit HttpTokenGate(std::string token) : token_(std::move(token)) {}
  std::string token_;
};

// Compares in time that depends only on expected's length, never on where they differ.
bool constantTimeEquals(std::string_view expected, std::string_view given);
// The credentials of "Bearer TOKEN" (scheme in any case, spaces around trimmed); nullopt when
// the header is not a bearer credential.
std::optional<std::string> bearerToken(std::string_view authorization);
// The value of cookie `name` in a Cookie header ("a=1; gdrmesh_token=X"); nullopt if absent.
std::optional<std::string> cookieValue(std::string_view header, std::string_view name);

// At start: the status page on a non-loopback address needs a token (`has_token`) or an
// explicit --http-allow-anonymous; kInvalidArgument naming both flags otherwise.
Status checkHttpExposure(const std::string& host_port, bool has_token, bool allow_anonymous);

}  // namespace gdrmesh
