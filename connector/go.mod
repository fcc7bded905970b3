module github.com/edge-agent/edge-agent/connector

go 1.26.0

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/edge-agent/edge-agent/transport v0.0.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/klauspost/compress v1.20.4
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)

replace github.com/edge-agent/edge-agent/transport => ../transport
