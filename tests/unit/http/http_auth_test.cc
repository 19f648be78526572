// The status page's reader token: which requests pass, what the others are answered, the
// token file's rules, and where a page without a token may be served.
#include "coordinator/http/http_auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace gdrmesh {
namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

HttpTokenGate gate() {
  auto g = HttpTokenGate::fromToken(kToken, "test");
  EXPECT_TRUE(g.ok()) << g.status().toString();
  return std::move(*g);
}

HttpAuthRequest get(const std::string& path) {
  HttpAuthRequest r;
  r.path = path;
  return r;
}

std::string header(const HttpAuthReply& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(HttpAuth, ConstantTimeEqualsComparesWholeStrings) {
  EXPECT_TRUE(constantTimeEquals("abc", "abc"));
  EXPECT_FALSE(constantTimeEquals("abc", "abd"));
  EXPECT_FALSE(constantTimeEquals("abc", "ab"));
  EXPECT_FALSE(constantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(constantTimeEquals("abc", ""));
  EXPECT_FALSE(constantTimeEquals("", "a"));
  EXPECT_FALSE(constantTimeEquals(std::string("ab\0", 3), "ab"));
}

TEST(HttpAuth, BearerTokenAndCookieParsing) {
  EXPECT_EQ(bearerToken("Bearer abc"), "abc");
  EXPECT_EQ(bearerToken("bearer   abc  "), "abc");
  EXPECT_EQ(bearerToken("BEARER\tabc"), "abc");
  EXPECT_FALSE(bearerToken("Basic YWxhZGRpbjpvcGVu").has_value());
  EXPECT_FALSE(bearerToken("Bearerabc").has_value());
  EXPECT_FALSE(bearerToken("Bearer").has_value());
  EXPECT_FALSE(bearerToken("").has_value());

  EXPECT_EQ(cookieValue("gdrmesh_token=x", "gdrmesh_token"), "x");
  EXPECT_EQ(cookieValue("a=1; gdrmesh_token=x; b=2", "gdrmesh_token"), "x");
  EXPECT_EQ(cookieValue("a=1;gdrmesh_token=\"x\"", "gdrmesh_token"), "x");
  EXPECT_FALSE(cookieValue("xgdrmesh_token=x", "gdrmesh_token").has_value());
  EXPECT_FALSE(cookieValue("gdrmesh_token", "gdrmesh_token").has_value());
  EXPECT_FALSE(cookieValue("", "gdrmesh_token").has_value());
}

TEST(HttpAuth, ARequestWithTheRightBearerTokenOrCookiePasses) {
  auto g = gate();
  auto r = get("/api/workers");
  r.authorization = "Bearer " + kToken;
  EXPECT_FALSE(g.check(r).has_value());
  r = get("/");
  r.cookie = "theme=dark; gdrmesh_token=" + kToken;
  EXPECT_FALSE(g.check(r).has_value());
  // A wrong bearer token does not spoil a right cookie (a browser may send both).
  r.authorization = "Bearer wrong";
  EXPECT_FALSE(g.check(r).has_value());
}

TEST(HttpAuth, EveryOtherRequestIs401NamingTheFix) {
  auto g = gate();
  for (const char* path : {"/", "/api/workers", "/metrics", "/healthz", "/app.js"}) {
    auto reply = g.check(get(path));
    ASSERT_TRUE(reply.has_value()) << path;
    EXPECT_EQ(reply->status, 401) << path;
    EXPECT_NE(reply->body.find("no token given"), std::string::npos) << reply->body;
    EXPECT_NE(reply->body.find("Authorization: Bearer"), std::string::npos) << reply->body;
    EXPECT_NE(reply->body.find("--http-token-file"), std::string::npos) << reply->body;
    EXPECT_NE(header(*reply, "WWW-Authenticate").find("Bearer"), std::string::npos);
    EXPECT_EQ(reply->content_type.rfind("text/plain", 0), 0u);
  }
  for (const std::string& bad :
       {"Bearer " + kToken.substr(1), "Bearer " + kToken + "x", "Basic " + kToken, kToken,
        "Bearer " + kToken.substr(0, 31) + "E"}) {
    auto r = get("/api/results");
    r.authorization = bad;
    auto reply = g.check(r);
    ASSERT_TRUE(reply.has_value()) << bad;
    EXPECT_EQ(reply->status, 401);
    EXPECT_NE(reply->body.find("does not match"), std::string::npos) << reply->body;
  }
  auto r = get("/");
  r.cookie = "gdrmesh_token=" + kToken.substr(0, 20);
  ASSERT_TRUE(g.check(r).has_value());
  EXPECT_EQ(g.check(r)->status, 401);
  // The token is never echoed back.
  EXPECT_EQ(g.check(r)->body.find(kToken.substr(0, 20)), std::string::npos);
}

TEST(HttpAuth, LoginWithTheTokenSetsAStrictHttpOnlyCookieAndRedirects) {
  auto g = gate();
  auto r = get("/login");
  r.login_token = kToken;
  r.token_count = 1;
  auto reply = g.check(r);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 303);
  EXPECT_EQ(header(*reply, "Location"), "/");
  const std::string cookie = header(*reply, "Set-Cookie");
  EXPECT_EQ(cookie.rfind("gdrmesh_token=" + kToken + ";", 0), 0u) << cookie;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("Path=/"), std::string::npos) << cookie;
  // The cookie it set opens the page.
  auto next = get("/");
  next.cookie = cookie.substr(0, cookie.find(';'));
  EXPECT_FALSE(g.check(next).has_value());

  r.login_token = "not-the-token-at-all";
  reply = g.check(r);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 401);
  EXPECT_EQ(header(*reply, "Set-Cookie"), "");

  auto none = g.check(get("/login"));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, 400);
  EXPECT_NE(none->body.find("/login?token=TOKEN"), std::string::npos);
  r.login_token = kToken;
  r.token_count = 2;
  ASSERT_TRUE(g.check(r).has_value());
  EXPECT_EQ(g.check(r)->status, 400) << "a repeated token parameter is refused";
}

TEST(HttpAuth, TokensAreLongAndCookieSafe) {
  EXPECT_EQ(HttpTokenGate::fromToken("short", "f").status().code(), Code::kInvalidArgument);
  EXPECT_NE(HttpTokenGate::fromToken("short", "f").status().message().find("16"),
            std::string::npos);
  EXPECT_FALSE(HttpTokenGate::fromToken(std::string(20, 'a') + ";b", "f").ok());
  EXPECT_FALSE(HttpTokenGate::fromToken(std::string(20, 'a') + " b", "f").ok());
  EXPECT_FALSE(HttpTokenGate::fromToken(std::string(600, 'a'), "f").ok());
  EXPECT_TRUE(HttpTokenGate::fromToken("q83vEjRWeJq8H2Nd+/w0Tg==", "f").ok());
}

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gdrmesh-http-auth.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }
  std::string write(const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/token";
    {
      std::ofstream f(path, std::ios::trunc);
      f << text;
    }
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }
  std::string dir_;
};

TEST_F(TokenFile, TheFirstLineTrimmedIsTheToken) {
  auto g = HttpTokenGate::fromFile(write("  " + kToken + "\n\nignored\n", 0600));
  ASSERT_TRUE(g.ok()) << g.status().toString();
  auto r = get("/");
  r.authorization = "Bearer " + kToken;
  EXPECT_FALSE(g->check(r).has_value());
}

TEST_F(TokenFile, AFileOthersCanReadIsRefusedWithTheChmod) {
  const std::string path = write(kToken + "\n", 0644);
  auto g = HttpTokenGate::fromFile(path);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Code::kInvalidArgument);
  EXPECT_NE(g.status().message().find("--http-token-file " + path), std::string::npos);
  EXPECT_NE(g.status().message().find("0644"), std::string::npos) << g.status().message();
  EXPECT_EQ(g.status().fix(), "chmod 600 " + path);
}

TEST_F(TokenFile, AMissingOrEmptyFileIsRefusedNamingTheFlag) {
  auto missing = HttpTokenGate::fromFile(dir_ + "/nosuch");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--http-token-file"), std::string::npos);
  auto empty = HttpTokenGate::fromFile(write("\n", 0600));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("0 characters"), std::string::npos)
      << empty.status().message();
  EXPECT_NE(empty.status().fix().find("openssl rand"), std::string::npos);
}

TEST(HttpAuth, ANonLoopbackPageNeedsATokenOrAnExplicitAnonymousFlag) {
  EXPECT_TRUE(checkHttpExposure("127.0.0.1:8080", false, false).ok());
  EXPECT_TRUE(checkHttpExposure("[::1]:0", false, false).ok());
  EXPECT_TRUE(checkHttpExposure("localhost:8080", false, false).ok());
  for (const char* hp : {"0.0.0.0:8080", "[::]:8080", "10.0.0.5:80", "coord1.example.com:8080"}) {
    Status st = checkHttpExposure(hp, false, false);
    ASSERT_FALSE(st.ok()) << hp;
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_NE(st.fix().find("--http-token-file"), std::string::npos) << st.fix();
    EXPECT_NE(st.fix().find("--http-allow-anonymous"), std::string::npos) << st.fix();
    EXPECT_TRUE(checkHttpExposure(hp, true, false).ok()) << hp;
    EXPECT_TRUE(checkHttpExposure(hp, false, true).ok()) << hp;
  }
}

}  // namespace
}  // namespace gdrmesh
