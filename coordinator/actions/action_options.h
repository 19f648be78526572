// What the coordinator does with a sweep's verdict (`actions:` in the cluster config,
// docs/config.md): drain or taint its suspects, resume or untaint them once a later sweep
// passes them, and the circuit breaker that bounds it. Off unless the config turns it on.
#pragma once

#include <string>
#include <vector>

namespace gdrmesh {

struct ActionOptions {
  // kOff: nothing; kDryRun: every decision is logged and recorded as "dry-run", nothing is
  // changed; kOn: the actuator acts.
  enum class Mode { kOff, kDryRun, kOn };
  Mode mode = Mode::kOff;
  std::string actuator = "slurm";  // slurm | kubernetes
  // The circuit breaker: drains within `window_seconds` (those of this sweep included) may
  // touch at most `max_share` of the cluster's hosts (every worker the coordinator knows); a sweep
  // that would go beyond acts on none of its suspects (NVSentinel's default: 50 % in 5 minutes).
  double max_share = 0.5;
  double window_seconds = 300;
  // Slurm: the scontrol binary (a name is looked up in PATH) and how long one call may take.
  std::string scontrol = "scontrol";
  double command_timeout_seconds = 10;
  // Kubernetes: the API server, the bearer token file and the CA bundle of its certificate
  // ("" with an https server: the system's CAs).
  std::string kubernetes_api;
  std::string kubernetes_token_file;
  std::string kubernetes_ca_file;
};

const char* toString(ActionOptions::Mode m);  // off | dry-run | on

// A command or webhook run when a sweep ends and when a suspect appears or clears (`hooks:`).
struct HookOptions {
  std::vector<std::string> command;  // argv, no shell; empty: none
  std::string url;                   // http(s) URL POSTed the JSON event; "": none
  std::string token_file;            // bearer token for url, read at each send; "": none
  int attempts = 3;                  // tries per event, then it is dropped (and logged)
  double timeout_seconds = 10;       // per try
  double backoff_seconds = 1;        // before the 2nd try, doubling after
  int queue_limit = 100;             // events waiting beyond this are dropped (and logged)
};

}  // namespace gdrmesh
