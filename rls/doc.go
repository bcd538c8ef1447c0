// Package rls is Envoy's rate limit service on a node
// (envoy.service.ratelimit.v3.RateLimitService, docs/envoy.md):
// envoyproxy/ratelimit's YAML configuration (config.go), the decision of a
// request as one RL.ALL call (service.go), the gRPC server with its health
// service and configuration reloads (server.go), forwarding in a cluster
// (forward.go) and upstream's metrics (stats.go).
//
// It reaches the keyspace only through the node's dispatcher, on internal
// clients, as a connection does: every check, count, replication and
// persistence of a command applies to its calls. It never imports engine,
// persist, resp, replication or the wiring (internal/lint enforces it).
package rls
