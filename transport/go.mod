module github.com/edge-agent/edge-agent/transport

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	go.uber.org/goleak v1.3.0
	golang.org/x/crypto v0.59.0
)

require golang.org/x/sys v0.50.0 // indirect
