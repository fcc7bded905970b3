module github.com/edge-agent/edge-agent/e2e

go 1.26.0

require (
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/edge-agent/edge-agent/connector v0.0.0
	github.com/edge-agent/edge-agent/starter v0.0.0
	github.com/goccy/go-yaml v1.19.2
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/open-telemetry/opamp-go v0.23.0
	go.opentelemetry.io/proto/otlp v1.11.1
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.31.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/grpc v1.85.0 // indirect
)

replace (
	github.com/edge-agent/edge-agent/connector => ../connector
	github.com/edge-agent/edge-agent/starter => ../starter
	github.com/edge-agent/edge-agent/transport => ../transport
)
