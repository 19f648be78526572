// Roles, authorisation and the plaintext listen rule (security/policy.h): pure functions.
#include "security/policy.h"

#include <gtest/gtest.h>

namespace gdrmesh {
namespace {

PeerIdentity peer(PeerRole role, const std::string& name) {
  PeerIdentity p;
  p.role = role;
  p.name = name;
  return p;
}

TEST(RoleTest, EveryRoleRoundTripsThroughItsName) {
  ASSERT_EQ(roleNames().size(), 5u);
  for (const auto& name : roleNames()) {
    auto r = parseRole(name, "--role");
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(toString(*r), name);
  }
}

TEST(RoleTest, AnUnknownRoleNamesTheFieldAndTheChoices) {
  auto r = parseRole("root", "--role");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--role"), std::string::npos);
  EXPECT_NE(r.status().message().find("'root'"), std::string::npos);
  EXPECT_NE(r.status().fix().find("admin"), std::string::npos);
  EXPECT_NE(r.status().fix().find("simulator"), std::string::npos);
  EXPECT_FALSE(parseRole("", "OU").ok());
  EXPECT_FALSE(parseRole("Admin", "OU").ok()) << "roles are case-sensitive";
}

TEST(IdentityNameTest, WorkerNameAlphabet) {
  EXPECT_TRUE(validIdentityName("gpu-01.rack_2"));
  EXPECT_TRUE(validIdentityName(std::string(64, 'a')));
  EXPECT_FALSE(validIdentityName(std::string(65, 'a')));
  EXPECT_FALSE(validIdentityName(""));
  EXPECT_FALSE(validIdentityName("a b"));
  EXPECT_FALSE(validIdentityName("a/b"));
  EXPECT_FALSE(validIdentityName("*"));
}

TEST(AuthorizeControlTest, AdminMayDoEverything) {
  EXPECT_TRUE(authorizeControl(peer(PeerRole::kAdmin, "alice"), Access::kAdmin, "StartSweep").ok());
  EXPECT_TRUE(authorizeControl(peer(PeerRole::kAdmin, "alice"), Access::kRead, "ListWorkers").ok());
}

TEST(AuthorizeControlTest, ReaderMayOnlyRead) {
  EXPECT_TRUE(authorizeControl(peer(PeerRole::kReader, "bob"), Access::kRead, "ListWorkers").ok());
  Status st = authorizeControl(peer(PeerRole::kReader, "bob"), Access::kAdmin, "StartSweep");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kPermissionDenied);
  EXPECT_NE(st.message().find("StartSweep"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("admin"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("reader 'bob'"), std::string::npos) << st.message();
  EXPECT_NE(st.fix().find("--role admin"), std::string::npos) << st.fix();
}

TEST(AuthorizeControlTest, WorkersSimulatorsAndTheCoordinatorCannotUseControl) {
  for (PeerRole r : {PeerRole::kWorker, PeerRole::kSimulator, PeerRole::kCoordinator}) {
    EXPECT_EQ(authorizeControl(peer(r, "x"), Access::kRead, "ListResults").code(),
              Code::kPermissionDenied)
        << toString(r);
    EXPECT_EQ(authorizeControl(peer(r, "x"), Access::kAdmin, "RunTest").code(),
              Code::kPermissionDenied)
        << toString(r);
  }
}

TEST(AuthorizeRegisterTest, AWorkerRegistersOnlyTheNameInItsCertificate) {
  EXPECT_TRUE(authorizeRegister(peer(PeerRole::kWorker, "gpu-01"), "gpu-01", false).ok());
  Status st = authorizeRegister(peer(PeerRole::kWorker, "gpu-02"), "gpu-01", false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kPermissionDenied);
  EXPECT_NE(st.message().find("'gpu-01'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'gpu-02'"), std::string::npos) << st.message();
  EXPECT_FALSE(authorizeRegister(peer(PeerRole::kWorker, "gpu-01"), "gpu-01x", false).ok());
  EXPECT_FALSE(authorizeRegister(peer(PeerRole::kWorker, "gpu-01"), "gpu-0", false).ok());
  EXPECT_FALSE(authorizeRegister(peer(PeerRole::kWorker, "gpu-01"), "gpu-01", true).ok())
      << "a worker certificate registers no simulated workers";
}

TEST(AuthorizeRegisterTest, ASimulatorRegistersOnlySimulatedWorkersUnderItsPrefix) {
  const PeerIdentity sim = peer(PeerRole::kSimulator, "sim");
  EXPECT_TRUE(authorizeRegister(sim, "sim-0000", true).ok());
  EXPECT_TRUE(authorizeRegister(sim, "sim-1023", true).ok());
  EXPECT_FALSE(authorizeRegister(sim, "sim-0000", false).ok()) << "never a real worker";
  EXPECT_FALSE(authorizeRegister(sim, "gpu-01", true).ok());
  EXPECT_FALSE(authorizeRegister(sim, "simx-0000", true).ok()) << "the prefix ends with a dash";
  EXPECT_FALSE(authorizeRegister(sim, "sim", true).ok());
}

TEST(AuthorizeRegisterTest, OtherRolesRegisterNothing) {
  for (PeerRole r : {PeerRole::kAdmin, PeerRole::kReader, PeerRole::kCoordinator}) {
    Status st = authorizeRegister(peer(r, "gpu-01"), "gpu-01", false);
    EXPECT_EQ(st.code(), Code::kPermissionDenied) << toString(r);
    EXPECT_NE(st.fix().find("--role worker"), std::string::npos) << st.fix();
  }
}

TEST(ListenTest, HostOfAListenAddress) {
  EXPECT_EQ(listenHost("127.0.0.1:7070"), "127.0.0.1");
  EXPECT_EQ(listenHost("[::1]:7070"), "[::1]");
  EXPECT_EQ(listenHost("[::]:0"), "[::]");
  EXPECT_EQ(listenHost("coord.example.com:7070"), "coord.example.com");
  EXPECT_EQ(listenHost("0.0.0.0:7070"), "0.0.0.0");
}

TEST(ListenTest, LoopbackHosts) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "localhost", "[::1]", "::1"}) {
    EXPECT_TRUE(isLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "[::]", "10.0.0.1", "127.example.com", "127.0.0.1.nip.io",
                        "localhost.example.com", "", "gpu-01"}) {
    EXPECT_FALSE(isLoopbackHost(h)) << h;
  }
}

TEST(ListenTest, PlaintextOnlyOnLoopbackUnlessForced) {
  EXPECT_TRUE(checkPlaintextListen("127.0.0.1:0", false).ok());
  EXPECT_TRUE(checkPlaintextListen("[::1]:7070", false).ok());
  Status st = checkPlaintextListen("0.0.0.0:7070", false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--insecure"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("0.0.0.0:7070"), std::string::npos) << st.message();
  EXPECT_NE(st.fix().find("--insecure-allow-remote"), std::string::npos) << st.fix();
  EXPECT_NE(st.fix().find("--tls-dir"), std::string::npos) << st.fix();
  EXPECT_FALSE(checkPlaintextListen("[::]:7070", false).ok());
  EXPECT_FALSE(checkPlaintextListen("gpu-01:7070", false).ok());
  EXPECT_TRUE(checkPlaintextListen("0.0.0.0:7070", true).ok());
}

}  // namespace
}  // namespace gdrmesh
