#include "coordinator/http/http_auth_hook.h"

#include <httplib.h>

#include <utility>

namespace gdrmesh {

void installTokenGate(httplib::Server& server, std::shared_ptr<const HttpTokenGate> gate) {
  if (!gate) return;
  server.set_pre_routing_handler(
      [gate = std::move(gate)](const httplib::Request& req, httplib::Response& res) {
        HttpAuthRequest a;
        a.path = req.path;
        a.authorization = req.get_header_value("Authorization");
        a.cookie = req.get_header_value("Cookie");
        if (req.path == "/login") {
          a.token_count = req.get_param_value_count("token");
          if (req.has_param("token")) a.login_token = req.get_param_value("token");
        }
        auto reply = gate->check(a);
        if (!reply) return httplib::Server::HandlerResponse::Unhandled;
        res.status = reply->status;
        for (const auto& [k, v] : reply->headers) res.set_header(k, v);
        res.set_content(reply->body, reply->content_type);
        return httplib::Server::HandlerResponse::Handled;
      });
}

}  // namespace gdrmesh
