// The Slurm actuator: drains a suspect with
//   scontrol update NodeName=N State=DRAIN Reason="gdrmesh: <reason> (sweep ID)"
// and resumes it with `scontrol update NodeName=N State=RESUME`. A node's owner is read from
// `scontrol show node -o N`: drained (or down) with a reason that starts with "gdrmesh:" is
// gdrmesh's, drained or down with any other reason is someone else's. Commands run through an
// injected CommandRunner with an argv, never a shell string.
#pragma once

#include <string>
#include <vector>

#include "coordinator/actions/actuator.h"
#include "coordinator/actions/command_runner.h"

namespace gdrmesh {

// What `scontrol show node -o` says of one node (one line of KEY=VALUE fields; Reason runs to
// the next field and may hold spaces, ending with "[user@time]").
struct SlurmNodeLine {
  std::string name;
  std::string state;   // "IDLE+DRAIN", "DOWN", ...
  std::string reason;  // without its trailing "[user@time]"
};
Result<SlurmNodeLine> parseSlurmNodeLine(const std::string& line);
// The owner of a node in that state with that reason.
NodeMark slurmMarkOf(const SlurmNodeLine& node);

class SlurmActuator final : public Actuator {
 public:
  SlurmActuator(CommandRunner& runner, std::string scontrol, double timeout_seconds);
  std::string name() const override { return "slurm"; }
  Result<NodeMark> inspect(const std::string& node) override;
  Status mark(const MarkRequest& request) override;
  Status clear(const std::string& node) override;
  std::string describeMark(const MarkRequest& request) const override;
  std::string describeClear(const std::string& node) const override;

  std::vector<std::string> markArgv(const MarkRequest& request) const;
  std::vector<std::string> clearArgv(const std::string& node) const;

 private:
  Status runUpdate(const std::vector<std::string>& argv);

  CommandRunner& runner_;
  std::string scontrol_;
  double timeout_seconds_;
};

}  // namespace gdrmesh
