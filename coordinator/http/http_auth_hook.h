// The one place the status page server meets the token gate (http_auth.h): a pre-routing
// handler that answers every request without the token before any route sees it.
#pragma once

#include <memory>

#include "coordinator/http/http_auth.h"

namespace httplib {
class Server;
}

namespace gdrmesh {

// Does nothing when `gate` is null (an anonymous page).
void installTokenGate(httplib::Server& server, std::shared_ptr<const HttpTokenGate> gate);

}  // namespace gdrmesh
