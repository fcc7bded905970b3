module github.com/edge-agent/edge-agent/connector

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.13.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
