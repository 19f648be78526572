// Unknown commands name the word and the nearest command (issue #22: `gdrmesh wokers`).
#include "cli/suggest.h"

#include <gtest/gtest.h>

namespace gdrmesh::cli {
namespace {

TEST(EditDistance, InsertionsDeletionsSubstitutionsSwaps) {
  EXPECT_EQ(editDistance("workers", "workers"), 0u);
  EXPECT_EQ(editDistance("wokers", "workers"), 1u);
  EXPECT_EQ(editDistance("wrokers", "workers"), 1u);  // neighbours swapped
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(nearestName("wokers", {"worker", "workers", "sweeps"}), "workers");
  EXPECT_EQ(nearestName("swep", {"sweep", "sweeps"}), "sweep");
  EXPECT_EQ(nearestName("zzzzzz", {"sweep", "workers"}), "");  // not a typo of anything
}

TEST(UnknownCommand, NamesTheWordAndTheNearestCommand) {
  CLI::App app{"test", "gdrmesh"};
  app.require_subcommand(1);
  app.add_subcommand("workers", "");
  app.add_subcommand("worker", "")->add_subcommand("remove", "");
  auto* sweep = app.add_subcommand("sweep", "");
  sweep->require_subcommand(1);
  sweep->add_subcommand("show", "");
  sweep->add_subcommand("run", "");

  auto msg = unknownCommandMessage(app, {"wokers"});
  ASSERT_TRUE(msg.has_value());
  EXPECT_NE(msg->find("gdrmesh: unknown command 'wokers'; did you mean 'workers'?"),
            std::string::npos)
      << *msg;
  EXPECT_NE(msg->find("commands: sweep worker workers"), std::string::npos) << *msg;
  msg = unknownCommandMessage(app, {"sweep", "shwo", "ID"});
  ASSERT_TRUE(msg.has_value());
  EXPECT_NE(msg->find("gdrmesh sweep: unknown command 'shwo'; did you mean 'show'?"),
            std::string::npos)
      << *msg;
  // Known words, options, and positionals where a command takes them: CLI11's own message.
  EXPECT_FALSE(unknownCommandMessage(app, {"sweep", "show", "ID"}).has_value());
  EXPECT_FALSE(unknownCommandMessage(app, {"--bogus"}).has_value());
  EXPECT_FALSE(unknownCommandMessage(app, {"worker", "extra"}).has_value());
}

}  // namespace
}  // namespace gdrmesh::cli
