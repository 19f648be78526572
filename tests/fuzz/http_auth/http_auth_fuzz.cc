// Fuzzes the status page's token gate (coordinator/http/http_auth.h) with what a client
// controls: the path, the Authorization and Cookie headers and /login's token parameter. Any
// input must get an answer or pass, never a crash; and a request may only pass when it
// carries the token exactly (as a bearer credential or the gdrmesh_token cookie), and /login
// may only set the cookie for the exact token. A violation aborts (a finding).
//
// Input: four fields separated by '\n': path, authorization, cookie, token parameter.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "coordinator/http/http_auth.h"

namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const gdrmesh::HttpTokenGate gate = [] {
    auto g = gdrmesh::HttpTokenGate::fromToken(kToken, "fuzz");
    if (!g.ok()) std::abort();
    return std::move(*g);
  }();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string fields[4];
  for (auto& f : fields) {
    const size_t nl = in.find('\n');
    f = std::string(in.substr(0, nl));
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  }
  gdrmesh::HttpAuthRequest r;
  r.path = fields[0];
  r.authorization = fields[1];
  r.cookie = fields[2];
  if (!fields[3].empty()) {
    r.login_token = fields[3];
    r.token_count = 1;
  }
  auto reply = gate.check(r);
  const auto bearer = gdrmesh::bearerToken(r.authorization);
  const auto cookie = gdrmesh::cookieValue(r.cookie, gdrmesh::HttpTokenGate::kCookie);
  const bool carries = (bearer && *bearer == kToken) || (cookie && *cookie == kToken);
  if (r.path == "/login") {
    if (!reply) std::abort();  // /login is always answered by the gate
    const bool right = r.login_token && *r.login_token == kToken;
    if ((reply->status == 303) != right) std::abort();
  } else if (!reply != carries) {
    std::abort();
  }
  if (reply && reply->status != 303 && reply->body.find(kToken) != std::string::npos) {
    std::abort();  // the token is never echoed in a refusal
  }
  (void)gdrmesh::constantTimeEquals(fields[1], fields[2]);
  return 0;
}
